// softmax: y = exp(x*scale - max) / sum per row, max-subtracted, the sum in double.
#include <cmath>
#include <string>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

Status op_softmax(const OpContext& c, const TensorView& x, float scale, const TensorView& y) {
  constexpr const char* op = "softmax";
  if (auto e = check_dense("x", x, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("y", y, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (!std::isfinite(scale)) return op_error(op, "scale = " + number(scale) + " must be finite");
  if (auto e = check_output("y", y, "x", x, true); !e.empty()) return op_error(op, e);

  const auto n = static_cast<std::size_t>(x.ne[0]);
  const float* xp = x.as<const float>();
  float* yp = y.as<float>();
  const Kernels& k = c.k;
  // exp costs several times an add: weigh rows accordingly when deciding to use threads.
  c.for_rows(static_cast<std::size_t>(x.rows()), 4 * n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) k.softmax_row(xp + r * n, scale, yp + r * n, n);
  });
  return Status::success();
}

}  // namespace graft::cpu
