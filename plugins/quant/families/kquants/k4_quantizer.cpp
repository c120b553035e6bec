#include "families/kquants/k4_quantizer.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "half.hpp"

namespace graft::quant {

namespace {

constexpr int kSub = 32;
constexpr int kRefineRadius = 2;

// Round half to even of v clamped to [lo - 1, hi + 1] (the callers clamp to [lo, hi] anyway): the
// 1.5 * 2^23 trick, valid below 2^22, without a libm call.
inline int nearest_clamped(float v, int lo, int hi) noexcept {
  const float below = static_cast<float>(lo - 1), above = static_cast<float>(hi + 1);
  v = v < below ? below : (v > above ? above : v);  // not fmin/fmax: those are libm calls here
  const float biased = v + 12582912.0f;
  std::int32_t i;
  std::memcpy(&i, &biased, sizeof i);
  return std::clamp((i & 0x007FFFFF) - 0x00400000, lo, hi);
}
inline int nearest(float v) noexcept { return nearest_clamped(v, -(1 << 20), 1 << 20); }

struct Fit {
  float scale = 0, min = 0;  // x ~ scale * q - min
};

// Step 1: weighted least-squares affine fits over a sweep of step sizes, the best kept.
Fit fit_sub_block(const float* x, int nmax) noexcept {
  float sum_x2 = 0;
  for (int i = 0; i < kSub; ++i) sum_x2 += x[i] * x[i];
  const float rms = std::sqrt(sum_x2 / kSub);
  float w[kSub];
  float lo = x[0], hi = x[0], sum_w = 0, sum_wx = 0;
  for (int i = 0; i < kSub; ++i) {
    w[i] = rms + std::fabs(x[i]);
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
    sum_w += w[i];
    sum_wx += w[i] * x[i];
  }
  lo = std::min(lo, 0.0f);
  if (hi == lo) return {0.0f, -lo};
  auto error = [&](float scale, float offset, const int* q) {
    float e = 0;
    for (int i = 0; i < kSub; ++i) {
      const float diff = scale * q[i] + offset - x[i];
      e += w[i] * diff * diff;
    }
    return e;
  };
  int q[kSub];
  float iscale = nmax / (hi - lo);
  for (int i = 0; i < kSub; ++i) q[i] = nearest_clamped(iscale * (x[i] - lo), 0, nmax);
  Fit best{1 / iscale, -lo};
  float best_err = error(best.scale, lo, q);
  // Candidate step counts nmax - 1 .. nmax + 1 in tenths (ggml sweeps nmax - 1 + 0.1 * is).
  for (int is = 0; is <= 20; ++is) {
    iscale = (nmax - 1.0f + 0.1f * is) / (hi - lo);
    float sl = 0, sl2 = 0, sxl = 0;
    for (int i = 0; i < kSub; ++i) {
      q[i] = nearest_clamped(iscale * (x[i] - lo), 0, nmax);
      sl += w[i] * q[i];
      sl2 += w[i] * q[i] * q[i];
      sxl += w[i] * q[i] * x[i];
    }
    const float det = sum_w * sl2 - sl * sl;
    if (det <= 0) continue;
    float scale = (sum_w * sxl - sum_wx * sl) / det;
    float offset = (sl2 * sum_wx - sl * sxl) / det;
    if (offset > 0) {  // mins are stored as non-negative amounts subtracted
      offset = 0;
      scale = sxl / sl2;
    }
    const float e = error(scale, offset, q);
    if (e < best_err) {
      best_err = e;
      best = {scale, -offset};
    }
  }
  return best;
}

// Squared error of one sub-block stored with 6-bit scale ls and min lm, with nearest codes.
float sub_block_error(const float* x, int nmax, float d, float dmin, int ls, int lm, std::uint8_t* q) noexcept {
  const float d1 = d * static_cast<float>(ls), m1 = dmin * static_cast<float>(lm);
  const float id1 = d1 != 0.0f ? 1.0f / d1 : 0.0f;
  float e = 0;
  for (int i = 0; i < kSub; ++i) {
    const int l = nearest_clamped((x[i] + m1) * id1, 0, nmax);
    if (q) q[i] = static_cast<std::uint8_t>(l);
    const float diff = d1 * static_cast<float>(l) - m1 - x[i];
    e += diff * diff;
  }
  return e;
}

// Steps 2-3 for one choice of the super-block scales; returns the total squared error.
float encode(const float* x, int nmax, const Fit* fits, float max_scale, float max_min, K4Block& out) noexcept {
  out.d = f32_to_f16_ggml(max_scale / 63);
  out.dmin = f32_to_f16_ggml(max_min / 63);
  const float d = f16_to_f32(out.d), dmin = f16_to_f32(out.dmin);
  float total = 0;
  for (int j = 0; j < 8; ++j) {
    const float* xs = x + kSub * j;
    const int ls0 = d > 0 ? std::clamp(nearest(fits[j].scale / d), 0, 63) : 0;
    const int lm0 = dmin > 0 ? std::clamp(nearest(fits[j].min / dmin), 0, 63) : 0;
    float best = INFINITY;
    int best_ls = ls0, best_lm = lm0;
    for (int ls = std::max(0, ls0 - kRefineRadius); ls <= std::min(63, ls0 + kRefineRadius); ++ls)
      for (int lm = std::max(0, lm0 - kRefineRadius); lm <= std::min(63, lm0 + kRefineRadius); ++lm) {
        const float e = sub_block_error(xs, nmax, d, dmin, ls, lm, nullptr);
        if (e < best) {
          best = e;
          best_ls = ls;
          best_lm = lm;
        }
      }
    out.sc[j] = static_cast<std::uint8_t>(best_ls);
    out.m[j] = static_cast<std::uint8_t>(best_lm);
    total += sub_block_error(xs, nmax, d, dmin, best_ls, best_lm, out.q + kSub * j);
  }
  return total;
}

}  // namespace

void quantize_k4_block(const float* x, int nmax, K4Block& out) noexcept {
  Fit fits[8];
  float max_scale = 0, max_min = 0;
  for (int j = 0; j < 8; ++j) {
    fits[j] = fit_sub_block(x + kSub * j, nmax);
    max_scale = std::max(max_scale, fits[j].scale);
    max_min = std::max(max_min, fits[j].min);
  }
  encode(x, nmax, fits, max_scale, max_min, out);
}

}  // namespace graft::quant
