// The fp16 and bf16 conversions of every plugin, in plain C++ (no F16C, so a plugin loads on any
// CPU; the SIMD paths that use vcvtph2ps / vcvtps2ph must give these bits). Bit-identical to ggml's
// GGML_FP16_TO_FP32 / GGML_FP32_TO_FP16 and GGML_BF16_TO_FP32 / GGML_FP32_TO_BF16 (ggml-impl.h),
// which is what GGUF files made by llama.cpp contain; only a NaN narrowed to fp16 has two
// spellings (f32_to_f16 and f32_to_f16_ggml).
#pragma once

#include <bit>
#include <cstdint>

namespace graft {

// Exact for every input: normals, subnormals, +-0, +-inf; a NaN keeps its sign and payload and comes
// back quiet, as vcvtph2ps returns it. Branch-free (both candidates are computed and one is
// selected), so loops over a row vectorize.
inline float f16_to_f32(std::uint16_t h) noexcept {
  const std::uint32_t w = static_cast<std::uint32_t>(h) << 16;
  const std::uint32_t sign = w & 0x80000000u;
  const std::uint32_t two_w = w + w;  // exponent and mantissa, sign shifted out
  // Normal, inf and NaN: move exponent+mantissa into f32 position with the exponent biased by
  // 224 (0xE0), then scale by 2^-112; the multiply rebias is exact and maps 31 -> 255 (inf/NaN).
  const float normalized = std::bit_cast<float>((two_w >> 4) + (0xE0u << 23)) * 0x1.0p-112f;
  // Subnormal: mantissa m placed in the low bits of 0.5f's mantissa gives 0.5 + m * 2^-24;
  // subtracting 0.5 leaves m * 2^-24 exactly.
  const float denormalized = std::bit_cast<float>((two_w >> 17) | (126u << 23)) - 0.5f;
  // Select with a mask rather than ?: so the compiler keeps the loop free of branches.
  const std::uint32_t subnormal = 0u - static_cast<std::uint32_t>(two_w < (1u << 27));  // exponent field 0
  const std::uint32_t bits = sign | (std::bit_cast<std::uint32_t>(denormalized) & subnormal) |
                             (std::bit_cast<std::uint32_t>(normalized) & ~subnormal);
  return std::bit_cast<float>(bits);
}

namespace half_detail {

// Round to nearest, ties to even. Overflow gives +-inf, values below half the smallest subnormal
// give +-0. A NaN stays NaN: sign | 0x7E00, plus the top 9 payload bits unless GgmlNan.
template <bool GgmlNan>
inline std::uint16_t f32_to_f16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t abs = x & 0x7FFFFFFFu;
  if (abs > 0x7F800000u)  // NaN
    return static_cast<std::uint16_t>(sign | 0x7E00u | (GgmlNan ? 0u : (abs >> 13) & 0x3FFu));
  if (abs >= 0x477FF000u)  // >= 65520 (half way between 65504 and 2^16) rounds to inf; also inf
    return static_cast<std::uint16_t>(sign | 0x7C00u);
  if (abs >= 0x38800000u) {  // >= 2^-14: a normal f16
    // Rebias the exponent (127 -> 15) and round the 13 dropped mantissa bits; a carry out of
    // the mantissa correctly bumps the exponent.
    const std::uint32_t rebased = abs - (112u << 23);
    const std::uint32_t half_up = 0x0FFFu + ((rebased >> 13) & 1u);
    return static_cast<std::uint16_t>(sign | ((rebased + half_up) >> 13));
  }
  if (abs < 0x33000000u)  // < 2^-25 (half the smallest subnormal; 2^-25 itself ties to even zero)
    return sign;
  // Subnormal f16: value = m * 2^-24 with m = mant24 >> shift, rounded to nearest even.
  const std::uint32_t exponent = abs >> 23;                    // 102..112
  const std::uint32_t mant24 = (abs & 0x7FFFFFu) | 0x800000u;  // implicit bit restored
  const std::uint32_t shift = 126u - exponent;                 // 14..24
  const std::uint32_t m = mant24 >> shift;
  const std::uint32_t rest = mant24 & ((1u << shift) - 1u);
  const std::uint32_t halfway = 1u << (shift - 1u);
  const std::uint32_t rounded = m + ((rest > halfway || (rest == halfway && (m & 1u))) ? 1u : 0u);
  return static_cast<std::uint16_t>(sign | rounded);  // rounded may carry into the normal range: correct
}

}  // namespace half_detail

// f32 -> f16 as vcvtps2ph rounds: nearest, ties to even, and a NaN keeps its sign and top 9 payload
// bits (quiet).
inline std::uint16_t f32_to_f16(float f) noexcept { return half_detail::f32_to_f16<false>(f); }

// ggml's GGML_FP32_TO_FP16 as its portable path computes it, which is what the weight formats
// write: f32_to_f16, except that every NaN becomes sign | 0x7E00 (no weight is NaN).
inline std::uint16_t f32_to_f16_ggml(float f) noexcept { return half_detail::f32_to_f16<true>(f); }

// bfloat16 is the top half of a binary32: exact for every pattern, NaNs included.
inline float bf16_to_f32(std::uint16_t h) noexcept { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

// ggml's rounding: nearest, ties to even, NaN forced quiet (bit 6 of the bf16), subnormals kept.
inline std::uint16_t f32_to_bf16(float f) noexcept {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<std::uint16_t>((x >> 16) | 64u);
  return static_cast<std::uint16_t>((x + (0x7FFFu + ((x >> 16) & 1u))) >> 16);
}

}  // namespace graft
