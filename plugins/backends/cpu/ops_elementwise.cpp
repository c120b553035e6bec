// Elementwise ops: add (b may be one row broadcast over all rows of a) and silu_mul (which takes
// row-strided views: the gate and up parts of a fused projection's output).
#include <string>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

namespace {

using RowFn = void (*)(const float*, const float*, float*, std::size_t);

// y = a (op) b with b either shaped like a or a single row of a.ne[0] elements.
Status binary(const OpContext& c, const char* op, RowFn row, const TensorView& a, const TensorView& b,
              const TensorView& y) {
  for (auto [name, t] : {std::pair{"a", &a}, {"b", &b}, {"y", &y}})
    if (auto e = check_dense(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  const bool broadcast = !same_shape(a, b);
  if (broadcast && (b.ne[0] != a.ne[0] || b.rows() != 1))
    return op_error(op, "b has shape " + shape_string(b) + "; expected " + shape_string(a) +
                            " like a, or one row of " + std::to_string(a.ne[0]));
  if (auto e = check_output("y", y, "a", a, true); !e.empty()) return op_error(op, e);
  if (broadcast) {
    // Rows are written in parallel while every row reads b.
    if (overlap(y, b) != Overlap::none) return op_error(op, "y overlaps b, which is broadcast over the rows");
  } else if (auto e = check_output("y", y, "b", b, true); !e.empty()) {
    return op_error(op, e);
  }

  const auto n = static_cast<std::size_t>(a.ne[0]);
  const float* ap = a.as<const float>();
  const float* bp = b.as<const float>();
  float* yp = y.as<float>();
  const std::size_t b_step = broadcast ? 0 : n;
  c.for_rows(static_cast<std::size_t>(a.rows()), n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r) row(ap + r * n, bp + r * b_step, yp + r * n, n);
  });
  return Status::success();
}

}  // namespace

Status op_add(const OpContext& c, const TensorView& a, const TensorView& b, const TensorView& y) {
  return binary(c, "add", c.k.add_row, a, b, y);
}

Status op_silu_mul(const OpContext& c, const TensorView& gate, const TensorView& up, const TensorView& y) {
  constexpr const char* op = "silu_mul";
  for (auto [name, t] : {std::pair{"gate", &gate}, {"up", &up}, {"y", &y}})
    if (auto e = check_rows(name, *t, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (!same_shape(gate, up))
    return op_error(op, "up has shape " + shape_string(up) + "; expected " + shape_string(gate) + " like gate");
  if (auto e = check_output("y", y, "gate", gate, true); !e.empty()) return op_error(op, e);
  if (auto e = check_output("y", y, "up", up, true); !e.empty()) return op_error(op, e);

  const auto n = static_cast<std::size_t>(gate.ne[0]);
  const Kernels& k = c.k;
  c.for_rows(static_cast<std::size_t>(gate.rows()), 4 * n, [&](std::size_t begin, std::size_t end) {
    for (std::size_t r = begin; r < end; ++r)
      k.silu_mul_row(row_ptr<const float>(gate, r), row_ptr<const float>(up, r), row_ptr<float>(y, r), n);
  });
  return Status::success();
}

}  // namespace graft::cpu
