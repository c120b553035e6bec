// Exact f16 and bf16 to f32 conversions in plain C++ (the scalar path; the SIMD paths use F16C
// and shifts and must give the same bits).
#pragma once

#include <bit>
#include <cstdint>

namespace graft::cpu {

// IEEE binary16 -> binary32, exact for every finite value including subnormals. A NaN keeps its
// sign and payload and comes back quiet, as x86 F16C (vcvtph2ps) returns it.
inline float f16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu;
  std::uint32_t mant = h & 0x3ffu;
  std::uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13) | (mant ? 0x00400000u : 0u);
  } else if (exp != 0) {
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) {
    bits = sign;
  } else {
    // Subnormal: shift the mantissa up until its leading one reaches the implicit-bit position.
    std::uint32_t e = 113;
    while (!(mant & 0x400u)) {
      mant <<= 1;
      --e;
    }
    bits = sign | (e << 23) | ((mant & 0x3ffu) << 13);
  }
  return std::bit_cast<float>(bits);
}

// bfloat16 is the top half of a binary32: exact for every pattern, NaNs included.
inline float bf16_to_f32(std::uint16_t h) noexcept {
  return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16);
}

}  // namespace graft::cpu
