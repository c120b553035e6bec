// get_rows: embedding lookup y[i] = table row ids[i], widened to f32 (exactly) from f16/bf16.
#include <cstring>
#include <string>

#include "ops.hpp"
#include "tensor_check.hpp"

namespace graft::cpu {

Status op_get_rows(const OpContext& c, const TensorView& table, const std::int32_t* ids, std::size_t n,
                   const TensorView& y) {
  constexpr const char* op = "get_rows";
  if (auto e = check_dense("table", table, {type_id::f32, type_id::f16, type_id::bf16}); !e.empty())
    return op_error(op, e);
  if (auto e = check_dense("y", y, {type_id::f32}); !e.empty()) return op_error(op, e);
  if (table.ne[2] != 1 || table.ne[3] != 1)
    return op_error(op, "table has shape " + shape_string(table) + "; expected [k, rows]");
  if (y.ne[0] != table.ne[0])
    return op_error(op, "y has ne[0] = " + std::to_string(y.ne[0]) + "; expected ne[0] of table = " +
                            std::to_string(table.ne[0]));
  if (static_cast<std::uint64_t>(y.rows()) != n)
    return op_error(op, "y has " + std::to_string(y.rows()) + " rows; expected n = " + std::to_string(n));
  if (n > 0 && ids == nullptr) return op_error(op, "ids is null");
  if (overlap(y, table) != Overlap::none) return op_error(op, "y overlaps table");
  const std::int64_t n_rows = table.ne[1];
  // Checked before any row is written, so a bad id leaves y untouched.
  for (std::size_t i = 0; i < n; ++i)
    if (ids[i] < 0 || ids[i] >= n_rows)
      return Status(Errc::out_of_range, "cpu backend: get_rows: ids[" + std::to_string(i) + "] = " +
                                            std::to_string(ids[i]) + " is out of range for a table of " +
                                            std::to_string(n_rows) + " rows");

  const auto k = static_cast<std::size_t>(table.ne[0]);
  float* yp = y.as<float>();
  const Kernels& kern = c.k;
  c.for_rows(n, k, [&](std::size_t begin, std::size_t end) {
    for (std::size_t i = begin; i < end; ++i) {
      const auto row = static_cast<std::size_t>(ids[i]);
      if (table.type == type_id::f32)
        std::memcpy(yp + i * k, table.as<const float>() + row * k, k * sizeof(float));
      else if (table.type == type_id::f16)
        kern.f16_to_f32(table.as<const std::uint16_t>() + row * k, yp + i * k, k);
      else
        kern.bf16_to_f32(table.as<const std::uint16_t>() + row * k, yp + i * k, k);
    }
  });
  return Status::success();
}

}  // namespace graft::cpu
