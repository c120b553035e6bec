// top_k: the k largest entries of each row, largest first (Backend::top_k). The order is total
// (larger value first, the lower index among equal values, NaN below every number), so every
// backend returns the same ids for the same row.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

namespace {
// Whether entry i (value a) comes before entry j (value b).
bool before(float a, std::int32_t i, float b, std::int32_t j) noexcept {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb) return nb;
  if (!na && a != b) return a > b;
  return i < j;
}
struct Entry {
  float v;
  std::int32_t i;
};

// The k best entries of a row, best first, in buffer[0..k). One pass: a buffer of up to 2k
// entries is cut back to its k best whenever it fills, and an entry is skipped with one comparison
// when it does not beat the k-th best so far (every buffered index is lower than the entry's, so
// an equal value loses: only a larger one, or any number against a NaN, gets in). So a 152K-wide
// row at k = 40 costs about one pass, not the n log k of a partial sort.
void best_k(const float* row, std::int64_t n, std::uint32_t k, std::vector<Entry>& buffer) {
  const auto by_order = [](const Entry& a, const Entry& b) { return before(a.v, a.i, b.v, b.i); };
  const std::size_t cap = std::max<std::size_t>(2 * std::size_t(k), 64);
  buffer.clear();
  buffer.reserve(cap);
  bool full = false;
  float kth = 0;
  bool kth_nan = false;
  auto shrink = [&] {
    std::nth_element(buffer.begin(), buffer.begin() + (k - 1), buffer.end(), by_order);
    buffer.resize(k);
    kth = buffer[k - 1].v;
    kth_nan = std::isnan(kth);
    full = true;
  };
  for (std::int64_t e = 0; e < n; ++e) {
    const float v = row[e];
    if (full && !(kth_nan ? !std::isnan(v) : v > kth)) continue;
    buffer.push_back({v, static_cast<std::int32_t>(e)});
    if (buffer.size() == cap) shrink();
  }
  std::partial_sort(buffer.begin(), buffer.begin() + k, buffer.end(), by_order);
}

}  // namespace

Status op_top_k(const OpContext& c, const TensorView& x, std::uint32_t k, const TensorView& ids, const TensorView& values) {
  constexpr const char* op = "top_k";
  if (auto e = check_dense("x", x, {type_id::f32}); !e.empty()) return op_error(op, e);
  const std::int64_t n = x.ne[0], rows = x.rows();
  if (k < 1 || k > n) return op_error(op, "k = " + std::to_string(k) + " must be between 1 and the row length " + std::to_string(n));
  if (auto e = check_dense("ids", ids, {type_id::i32}); !e.empty()) return op_error(op, e);
  if (ids.ne[0] != k || ids.rows() != rows)
    return op_error(op, "ids has shape " + shape_string(ids) + "; expected [" + std::to_string(k) + ", " +
                            std::to_string(rows) + "] (k, rows of x)");
  if (values.data) {
    if (auto e = check_dense("values", values, {type_id::f32}); !e.empty()) return op_error(op, e);
    if (!same_shape(values, ids)) return op_error(op, "values has shape " + shape_string(values) + "; expected " + shape_string(ids) + " like ids");
    if (overlap(values, x) != Overlap::none) return op_error(op, "values overlaps x");
    if (overlap(values, ids) != Overlap::none) return op_error(op, "values overlaps ids");
  }
  if (overlap(ids, x) != Overlap::none) return op_error(op, "ids overlaps x");

  c.for_rows(static_cast<std::size_t>(rows), static_cast<std::size_t>(n), [&](std::size_t r0, std::size_t r1) {
    std::vector<Entry> buffer;
    for (std::size_t r = r0; r < r1; ++r) {
      const float* row = row_ptr<const float>(x, r);
      auto* out = row_ptr<std::int32_t>(ids, r);
      if (k == 1) {  // greedy decoding's case: one pass from the first number, strict > keeps the lowest index
        std::int32_t best = 0;
        while (best < n && std::isnan(row[best])) ++best;
        if (best == n) {
          best = 0;  // all NaN: the lowest index
        } else {
          float best_v = row[best];
          for (std::int32_t i = best + 1; i < n; ++i)
            if (row[i] > best_v) best_v = row[i], best = i;  // false for NaN, which never wins
        }
        out[0] = best;
      } else {
        best_k(row, n, k, buffer);
        for (std::uint32_t i = 0; i < k; ++i) out[i] = buffer[i].i;
      }
      if (values.data) {
        float* v = row_ptr<float>(values, r);
        for (std::uint32_t i = 0; i < k; ++i) v[i] = row[out[i]];
      }
    }
  });
  return Status::success();
}

}  // namespace graft::cpu
