// GCC vector types of W lanes for the quantizers' lane-parallel searches: 4 (SSE2), 8 (AVX2) or 16
// (AVX-512) floats and int32s. One specialisation per width: GCC drops a vector_size that depends
// on a template parameter.
#pragma once

#include <cstdint>

namespace graft::quant {

template <int W>
struct Vectors;
template <>
struct Vectors<4> {
  using F = float __attribute__((vector_size(16)));
  using I = std::int32_t __attribute__((vector_size(16)));
};
template <>
struct Vectors<8> {
  using F = float __attribute__((vector_size(32)));
  using I = std::int32_t __attribute__((vector_size(32)));
};
template <>
struct Vectors<16> {
  using F = float __attribute__((vector_size(64)));
  using I = std::int32_t __attribute__((vector_size(64)));
};

}  // namespace graft::quant
