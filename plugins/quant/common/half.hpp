// Scalar fp16 and bf16 conversions, bit-identical to ggml's GGML_FP32_TO_FP16 / GGML_FP16_TO_FP32
// and GGML_FP32_TO_BF16 / GGML_BF16_TO_FP32 (ggml-impl.h), which is what GGUF files made by
// llama.cpp contain. Header-only and compiled for the baseline ISA in every file that uses it.
#pragma once

#include <bit>
#include <cstdint>

namespace graft::quant {

// Exact: every fp16 value is a float.
inline float fp16_to_fp32(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1Fu;
  std::uint32_t mant = h & 0x3FFu;
  if (exp == 0x1F) return std::bit_cast<float>(sign | 0x7F800000u | (mant << 13));  // inf / NaN
  if (exp != 0) return std::bit_cast<float>(sign | ((exp + 112) << 23) | (mant << 13));
  if (mant == 0) return std::bit_cast<float>(sign);
  // Subnormal: normalise into a float (always representable).
  int e = 113;
  while (!(mant & 0x400u)) {
    mant <<= 1;
    --e;
  }
  return std::bit_cast<float>(sign | (static_cast<std::uint32_t>(e) << 23) | ((mant & 0x3FFu) << 13));
}

// Round to nearest, ties to even; overflow to infinity; NaN becomes sign|0x7E00 as in ggml's
// software path (the F16C instruction would keep payload bits instead; no weight is NaN).
inline std::uint16_t fp32_to_fp16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t ax = x & 0x7FFFFFFFu;
  if (ax > 0x7F800000u) return sign | 0x7E00u;
  if (ax >= 0x477FF000u) return sign | 0x7C00u;  // >= 65520: rounds to infinity
  if (ax >= 0x38800000u) {                          // normal fp16 range (>= 2^-14)
    const std::uint32_t r = ax - 0x38000000u;       // rebias the exponent from 127 to 15
    return static_cast<std::uint16_t>(sign | ((r + 0x0FFFu + ((r >> 13) & 1u)) >> 13));
  }
  // fp16 subnormal (or zero): the result counts units of 2^-24.
  const std::uint32_t e = ax >> 23;
  if (e < 102) return sign;  // below 2^-25: rounds to zero (2^-25 itself ties to even zero)
  const std::uint32_t m = (ax & 0x7FFFFFu) | 0x800000u;
  const std::uint32_t shift = 126 - e;  // 14..24
  std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1);
  const std::uint32_t half = 1u << (shift - 1);
  if (rem > half || (rem == half && (q & 1u))) ++q;  // may carry into the smallest normal: correct
  return static_cast<std::uint16_t>(sign | q);
}

inline float bf16_to_fp32(std::uint16_t h) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// ggml's rounding: nearest, ties to even, NaN forced quiet (bit 6 of the bf16), subnormals kept.
inline std::uint16_t fp32_to_bf16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 64u);
  return static_cast<std::uint16_t>((x + (0x7FFFu + ((x >> 16) & 1u))) >> 16);
}

}  // namespace graft::quant
