// rms_norm: y = x / sqrt(mean(x^2) + eps) * w per row (ne[0] = row length); x and y may be
// row-strided views.
#include <cmath>
#include <string>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

Status op_rms_norm(const OpContext& c, const TensorView& x, const TensorView& w, float eps, const TensorView& y) {
  constexpr const char* op = "rms_norm";
  for (auto [name, t] : {std::pair{"x", &x}, {"y", &y}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (auto e = check_dense("w", w, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (w.elements() != x.ne[0])
    return op_error(op, "w has " + std::to_string(w.elements()) + " elements; expected ne[0] of x = " +
                            std::to_string(x.ne[0]));
  if (auto e = check_eps(eps); !e.empty()) return op_error(op, e);
  if (auto e = check_output("y", y, "x", x, true); !e.empty()) return op_error(op, e);
  if (overlap(y, w) != Overlap::none) return op_error(op, "y overlaps w");

  const auto n = static_cast<std::size_t>(x.ne[0]);
  const float* wp = w.as<const float>();
  const Kernels& k = c.k;
  c.for_rows(static_cast<std::size_t>(x.rows()), n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) k.rms_norm_row(row_ptr<const float>(x, r), wp, eps, row_ptr<float>(y, r), n);
  });
  return Status::success();
}

}  // namespace graft::cpu
