// Shape checks for the f32 activation views the store reads and writes. Rows (ne[0] floats) must
// be contiguous; rows and row groups may be strided, so a host can pass the K or V part of a fused
// QKV buffer without copying.
#pragma once

#include <cstdint>
#include <string_view>

#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft::kv {

// `what` names the call and argument ("write: k"); `dims` names the expected axes
// ("[head_dim_k, n_kv_heads, n]") so the message says what each number should have been.
Status check_f32_rows(const TensorView& t, std::string_view what, std::int64_t ne0, std::int64_t ne1, std::int64_t ne2,
                      std::string_view dims);

// Row r of plane p: ne[0] contiguous floats.
inline const float* row(const TensorView& t, std::int64_t r, std::int64_t p) noexcept {
  return reinterpret_cast<const float*>(static_cast<const char*>(t.data) + static_cast<std::size_t>(p) * t.nb[2] +
                                        static_cast<std::size_t>(r) * t.nb[1]);
}
inline float* mutable_row(const TensorView& t, std::int64_t r, std::int64_t p) noexcept {
  return reinterpret_cast<float*>(static_cast<char*>(t.data) + static_cast<std::size_t>(p) * t.nb[2] +
                                  static_cast<std::size_t>(r) * t.nb[1]);
}

}  // namespace graft::kv
