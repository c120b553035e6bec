// The exponential of the attention's softmax (docs/kvstores.md), defined as a fixed sequence of
// f32 operations so the SIMD kernels compute 8 or 16 of them at once with the same bits as this
// scalar form (glibc's expf is correctly rounded but has no vector twin to match it bit for bit).
// Cephes expf (plugins/common/exp_poly.hpp), each multiply and add rounded on its own:
//   n = roundeven(x * log2e); r = (x - n * ln2_hi) - n * ln2_lo;
//   p = P0; p = p * r + P1; ... p = p * r + P5;  y = (p * (r * r) + r) + 1;
//   result = y with n added to its exponent field.
// Arguments below kMin give +0 (e^-86 < 2^-124, nothing next to the maximum's e^0 = 1, and the
// exponent add would leave the normal range), above kMax +inf, NaN stays NaN. Within ~2 ulp of
// expf elsewhere.
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

#include "exp_poly.hpp"

namespace graft::kv {

inline constexpr float kSoftmaxExpMin = -86.0f;
inline constexpr float kSoftmaxExpMax = 88.0f;

inline float softmax_exp(float x) {
  using namespace exp_poly;
  if (x != x) return x;
  if (x < kSoftmaxExpMin) return 0.0f;
  if (x > kSoftmaxExpMax) return std::numeric_limits<float>::infinity();
  const float n = std::nearbyint(x * kLog2e);  // the default rounding mode: to nearest even
  const float r = (x - n * kLn2Hi) - n * kLn2Lo;
  float p = kP0;
  p = p * r + kP1;
  p = p * r + kP2;
  p = p * r + kP3;
  p = p * r + kP4;
  p = p * r + kP5;
  const float y = (p * (r * r) + r) + 1.0f;
  const auto e = static_cast<std::uint32_t>(static_cast<std::int32_t>(n)) << 23;
  return std::bit_cast<float>(std::bit_cast<std::uint32_t>(y) + e);
}

}  // namespace graft::kv
