// matmul for dense weights: y[j][i] = dot(w row i, x row j); w f32/f16/bf16 [k, m], x f32 [k, n],
// y f32 [m, n]. Threads split the weight rows; an f16/bf16 row is widened (exactly) to f32 once
// per call and then dotted with every x row, so the result equals the f32 matmul of the widened
// weights. x stays f32 (ggml would round it to the weight type first; see docs/backends.md).
#include <algorithm>
#include <atomic>
#include <string>
#include <vector>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

Status op_matmul(const OpContext& c, const TensorView& w, const TensorView& x, const TensorView& y) {
  constexpr const char* op = "matmul";
  if (auto e = check_dense("w", w, {type_id::f32, type_id::f16, type_id::bf16}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("x", x, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("y", y, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (w.ne[2] != 1 || w.ne[3] != 1) return op_error(op, "w has shape " + shape_string(w) + "; expected [k, m]");
  if (x.ne[0] != w.ne[0])
    return op_error(op, "x has ne[0] = " + std::to_string(x.ne[0]) + "; expected k = ne[0] of w = " +
                            std::to_string(w.ne[0]));
  TensorView expected = x;
  expected.ne[0] = w.ne[1];
  if (!same_shape(y, expected))
    return op_error(op, "y has shape " + shape_string(y) + "; expected " + shape_string(expected) +
                            ": ne[1] of w by the rows of x");
  if (overlap(y, x) != Overlap::none) return op_error(op, "y overlaps x; matmul cannot run in place");
  if (overlap(y, w) != Overlap::none) return op_error(op, "y overlaps w");

  const auto k = static_cast<std::size_t>(w.ne[0]);
  const auto m = static_cast<std::size_t>(w.ne[1]);
  const auto n = static_cast<std::size_t>(x.rows());
  if (n == 0 || m == 0) return Status::success();
  const float* xp = x.as<const float>();
  float* yp = y.as<float>();
  const Kernels& kern = c.k;
  std::atomic<bool> out_of_memory{false};
  c.for_rows(m, k * n, [&](std::size_t begin, std::size_t end) {
    // Blocks of kRowBlock weight rows (widened once into scratch for f16/bf16) meet every group of
    // kColGroup x rows, so a group stays in L1 while the block's rows pass over it. The grouping
    // does not change any dot's arithmetic (dot_cols guarantees it).
    constexpr std::size_t kRowBlock = 16, kColGroup = 4;
    std::vector<float> scratch;
    if (w.type != type_id::f32) {
      try {
        scratch.resize(kRowBlock * k);
      } catch (...) {  // no exception may leave a pool thread
        out_of_memory = true;
        return;
      }
    }
    const auto* wh = w.as<const std::uint16_t>();
    const auto widen = w.type == type_id::f16 ? kern.f16_to_f32 : kern.bf16_to_f32;
    for (std::size_t i0 = begin; i0 < end; i0 += kRowBlock) {
      const std::size_t rows = std::min(kRowBlock, end - i0);
      const float* block = w.as<const float>() + i0 * k;
      if (w.type != type_id::f32) {
        for (std::size_t r = 0; r < rows; ++r) widen(wh + (i0 + r) * k, scratch.data() + r * k, k);
        block = scratch.data();
      }
      for (std::size_t j = 0; j < n; j += kColGroup) {
        const std::size_t cols = std::min(kColGroup, n - j);
        for (std::size_t r = 0; r < rows; ++r)
          kern.dot_cols(block + r * k, xp + j * k, k, k, cols, yp + j * m + i0 + r, m);
      }
    }
  });
  if (out_of_memory) return Status(Errc::out_of_memory, "cpu backend: matmul: out of memory for a weight row");
  return Status::success();
}

}  // namespace graft::cpu
