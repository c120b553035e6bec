// softmax: each row's probabilities (Backend::softmax), exactly as defined there: the largest
// number, f32 exponentials of the differences, their sum in double in index order, one f32
// reciprocal. The loop is plain and serial within a row, so the bits depend on neither the
// thread count nor the SIMD level.
#include <cmath>
#include <limits>
#include <string>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

Status op_softmax(const OpContext& c, const TensorView& x, const TensorView& y) {
  constexpr const char* op = "softmax";
  if (auto e = check_dense("x", x, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("y", y, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (!same_shape(x, y)) return op_error(op, "y has shape " + shape_string(y) + "; expected " + shape_string(x) + " like x");
  const Overlap o = overlap(x, y);
  if (o != Overlap::none && o != Overlap::same) return op_error(op, "y overlaps x without being x");
  const std::int64_t n = x.ne[0], rows = x.rows();
  c.for_rows(static_cast<std::size_t>(rows), static_cast<std::size_t>(n), [&](std::size_t r0, std::size_t r1) {
    for (std::size_t r = r0; r < r1; ++r) {
      const float* in = row_ptr<const float>(x, r);
      float* out = row_ptr<float>(y, r);
      float m = -std::numeric_limits<float>::infinity();
      bool any = false;
      for (std::int64_t i = 0; i < n; ++i)
        if (!std::isnan(in[i]) && (!any || in[i] > m)) m = in[i], any = true;
      if (!any) m = std::numeric_limits<float>::quiet_NaN();
      double sum = 0;
      for (std::int64_t i = 0; i < n; ++i) sum += out[i] = std::exp(in[i] - m);
      const auto inv = static_cast<float>(1.0 / sum);
      for (std::int64_t i = 0; i < n; ++i) out[i] *= inv;
    }
  });
  return Status::success();
}

}  // namespace graft::cpu
