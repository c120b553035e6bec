#include "formats/q6_k/q6_k_quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "half.hpp"

namespace graft::quant {

namespace {

constexpr int kSub = 16;
constexpr int kRefineRadius = 3;
// Below this largest scale the block is stored as zeros (ggml's GROUP_MAX_EPS).
constexpr float kZeroScale = 1e-15f;

// Round half to even of v clamped to [lo - 1, hi + 1] (the callers clamp to [lo, hi] anyway): the
// 1.5 * 2^23 trick, valid below 2^22, without a libm call.
inline int nearest_clamped(float v, int lo, int hi) noexcept {
  const float below = static_cast<float>(lo - 1), above = static_cast<float>(hi + 1);
  v = v < below ? below : (v > above ? above : v);
  const float biased = v + 12582912.0f;
  std::int32_t i;
  std::memcpy(&i, &biased, sizeof i);
  return std::clamp((i & 0x007FFFFF) - 0x00400000, lo, hi);
}

// Step 1: the weighted least-squares scale of the best step size in the sweep.
float fit_sub_block(const float* x) noexcept {
  float max = 0, amax = 0;
  for (int i = 0; i < kSub; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (amax < kZeroScale) return 0.0f;
  float best_scale = -max / 32, best_merit = -1;
  for (int is = -9; is <= 9; ++is) {
    const float iscale = -(32 + 0.1f * is) / max;
    float sxl = 0, sl2 = 0;
    for (int i = 0; i < kSub; ++i) {
      const int l = nearest_clamped(iscale * x[i], -32, 31);
      const float w = x[i] * x[i];
      sxl += w * x[i] * l;
      sl2 += w * l * l;
    }
    // The weighted error at the least-squares scale is sum(w x^2) - sxl^2 / sl2.
    if (sl2 > 0 && sxl * sxl / sl2 > best_merit) {
      best_merit = sxl * sxl / sl2;
      best_scale = sxl / sl2;
    }
  }
  return best_scale;
}

float sub_block_error(const float* x, float d, int s, std::uint8_t* q) noexcept {
  const float ds = d * static_cast<float>(s);
  const float ids = ds != 0.0f ? 1.0f / ds : 0.0f;
  float e = 0;
  for (int i = 0; i < kSub; ++i) {
    const int l = nearest_clamped(x[i] * ids, -32, 31);
    if (q) q[i] = static_cast<std::uint8_t>(l + 32);
    const float diff = ds * static_cast<float>(l) - x[i];
    e += diff * diff;
  }
  return e;
}

// Steps 2-3 for one super-block scale; returns the total squared error.
float encode(const float* x, const float* fits, float max_scale, std::uint16_t& dh, std::int8_t* sc,
             std::uint8_t* q) noexcept {
  dh = f32_to_f16_ggml(-max_scale / 128);
  const float d = f16_to_f32(dh);
  float total = 0;
  for (int j = 0; j < 16; ++j) {
    const float* xs = x + kSub * j;
    const int s0 = d != 0.0f ? nearest_clamped(fits[j] / d, -128, 127) : 0;
    float best = INFINITY;
    int best_s = s0;
    for (int s = std::max(-128, s0 - kRefineRadius); s <= std::min(127, s0 + kRefineRadius); ++s) {
      const float e = sub_block_error(xs, d, s, nullptr);
      if (e < best) {
        best = e;
        best_s = s;
      }
    }
    sc[j] = static_cast<std::int8_t>(best_s);
    total += sub_block_error(xs, d, best_s, q + kSub * j);
  }
  return total;
}

}  // namespace

void quantize_q6_k_block(const float* x, block_q6_k& out) noexcept {
  float fits[16];
  float max_scale = 0;
  for (int j = 0; j < 16; ++j) {
    fits[j] = fit_sub_block(x + kSub * j);
    if (std::fabs(fits[j]) > std::fabs(max_scale)) max_scale = fits[j];
  }
  std::uint8_t q[kQK_K];
  std::memset(&out, 0, sizeof out);
  std::memset(q, 32, sizeof q);  // code 32 is the value 0
  if (std::fabs(max_scale) < kZeroScale) {
    pack_q6_k_codes(q, out);
    return;
  }
  encode(x, fits, max_scale, out.d, out.scales, q);
  pack_q6_k_codes(q, out);
}

}  // namespace graft::quant
