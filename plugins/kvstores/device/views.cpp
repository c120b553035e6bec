#include "views.hpp"

#include <string>

namespace graft::kv {

namespace {
std::string shape(const TensorView& t) {
  std::string s = "[";
  for (int d = 0; d < 4; ++d) {
    if (d == 3 && t.ne[3] == 1) break;
    if (d) s += ", ";
    s += std::to_string(t.ne[d]);
  }
  return s + "]";
}
}  // namespace

Status check_f32_rows(const TensorView& t, std::string_view what, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2,
                      std::string_view dims) {
  const std::string prefix = "kvstore device: " + std::string(what);
  if (t.type != type_id::f32)
    return Status(Errc::invalid_argument, prefix + " must be f32 (type id 0), got type id " + std::to_string(t.type));
  if (t.ne[0] != ne0 || t.ne[1] != ne1 || t.ne[2] != ne2 || t.ne[3] != 1)
    return Status(Errc::invalid_argument, prefix + " has shape " + shape(t) + ", expected [" + std::to_string(ne0) +
                                              ", " + std::to_string(ne1) + ", " + std::to_string(ne2) +
                                              "] = " + std::string(dims));
  const std::size_t row_bytes = sizeof(float) * static_cast<std::size_t>(ne0);
  // Rows must not overlap: the store writes `out` rows from several threads.
  if (t.nb[0] != sizeof(float) || (ne1 > 1 && t.nb[1] < row_bytes) ||
      (ne2 > 1 && t.nb[2] < t.nb[1] * static_cast<std::size_t>(ne1 - 1) + row_bytes))
    return Status(Errc::invalid_argument, prefix + " has strides [" + std::to_string(t.nb[0]) + ", " +
                                              std::to_string(t.nb[1]) + ", " + std::to_string(t.nb[2]) +
                                              "]; rows must be contiguous floats and must not overlap");
  if (!t.data && ne0 * ne1 * ne2 > 0) return Status(Errc::invalid_argument, prefix + " has no data (null pointer)");
  return Status::success();
}

}  // namespace graft::kv
