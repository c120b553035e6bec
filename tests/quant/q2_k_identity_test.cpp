// The Q2_K quantizer was made faster without changing its output: its first version
// (plugins/quant/formats/q2_k/q2_k_format.cpp before the speed-up, copied verbatim below but for names) is
// the reference for kquant_identity.hpp's data at every SIMD level.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "half.hpp"
#include "kquant_identity.hpp"

namespace {

namespace first_version {

using graft::f16_to_f32;
using graft::f32_to_f16_ggml;

struct BlockQ2K {
  std::uint8_t scales[16];
  std::uint8_t qs[64];
  std::uint16_t d;
  std::uint16_t dmin;
};
static_assert(sizeof(BlockQ2K) == 84);

constexpr int kSub = 16;  // sub-block length

// Nearest integer in 0..nmax (half to even); NaN gives 0, so non-finite input stays defined.
inline int clamp_code(float t, int nmax) {
  if (!(t > 0.0f)) return 0;
  if (t >= static_cast<float>(nmax)) return nmax;
  return static_cast<int>(std::nearbyint(t));
}

// The code of x for one sub-block's dequantization dl * q - ml.
inline int code_for(float x, float dl, float ml) { return dl > 0.0f ? clamp_code((x + ml) / dl, 3) : 0; }

// Step 1: least-squares (scale a >= 0, offset b <= 0) with codes from a sweep of trial steps.
void fit_sub_block(const float* x, float& scale, float& neg_min) {
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kSub; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (lo > 0.0f) lo = 0.0f;
  scale = 0.0f;
  neg_min = -lo;
  if (!(hi > lo)) return;
  float best = INFINITY;
  for (int step = -1; step <= 15; ++step) {
    // step -1 is the plain range fit; 0..15 sweep the trial step around it as ggml does.
    const float iscale = step < 0 ? 3.0f / (hi - lo) : (3.0f - 0.5f + 0.1f * static_cast<float>(step)) / (hi - lo);
    int l[kSub];
    double sl = 0, sl2 = 0, sx = 0, sxl = 0;
    for (int i = 0; i < kSub; ++i) {
      l[i] = clamp_code(iscale * (x[i] - lo), 3);
      sl += l[i];
      sl2 += l[i] * l[i];
      sx += x[i];
      sxl += static_cast<double>(x[i]) * l[i];
    }
    if (!(sl2 > 0)) continue;
    // One distinct code (det = 0) leaves only the b = 0 fit.
    const double det = kSub * sl2 - sl * sl;
    double a = det > 0 ? (kSub * sxl - sx * sl) / det : 0, b = det > 0 ? (sl2 * sx - sl * sxl) / det : 1;
    if (b > 0) {
      b = 0;
      a = sxl / sl2;
    }
    if (a < 0) continue;
    double err = 0;
    for (int i = 0; i < kSub; ++i) {
      const double e = a * l[i] + b - x[i];
      err += e * e;
    }
    if (err < best) {
      best = static_cast<float>(err);
      scale = static_cast<float>(a);
      neg_min = static_cast<float>(-b);
    }
  }
}

// Step 3 for one sub-block: the best 4-bit (sc, m) within +-2 of the fit, and its squared error.
float choose_codes(const float* x, float d, float dmin, float a, float neg_min, std::uint8_t& packed) {
  const int sc0 = d > 0.0f ? clamp_code(a / d, 15) : 0;
  const int m0 = dmin > 0.0f ? clamp_code(neg_min / dmin, 15) : 0;
  float best = INFINITY;
  for (int sc = std::max(0, sc0 - 2); sc <= std::min(15, sc0 + 2); ++sc)
    for (int m = std::max(0, m0 - 2); m <= std::min(15, m0 + 2); ++m) {
      const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
      float err = 0.0f;
      for (int i = 0; i < kSub; ++i) {
        const float e = dl * static_cast<float>(code_for(x[i], dl, ml)) - ml - x[i];
        err += e * e;
      }
      if (err < best) {
        best = err;
        packed = static_cast<std::uint8_t>(sc | (m << 4));
      }
    }
  return best;
}

void quantize_block(const float* x, BlockQ2K& out) {
  float a[16], nm[16];
  float max_a = 0.0f, max_m = 0.0f;
  for (int j = 0; j < 16; ++j) {
    fit_sub_block(x + kSub * j, a[j], nm[j]);
    max_a = std::max(max_a, a[j]);
    max_m = std::max(max_m, nm[j]);
  }
  // Shrinking a super-scale clips the largest sub-block but refines all the others.
  constexpr float kShrink[] = {1.0f, 0.94f, 0.88f};
  float best = INFINITY;
  for (float fd : kShrink)
    for (float fm : kShrink) {
      BlockQ2K cand{};
      cand.d = f32_to_f16_ggml(max_a * fd / 15.0f);
      cand.dmin = f32_to_f16_ggml(max_m * fm / 15.0f);
      const float d = f16_to_f32(cand.d), dmin = f16_to_f32(cand.dmin);
      float err = 0.0f;
      for (int j = 0; j < 16 && err < best; ++j) err += choose_codes(x + kSub * j, d, dmin, a[j], nm[j], cand.scales[j]);
      if (!(err < best)) continue;
      best = err;
      for (int j = 0; j < 16; ++j) {
        const float dl = d * static_cast<float>(cand.scales[j] & 15), ml = dmin * static_cast<float>(cand.scales[j] >> 4);
        for (int i = 0; i < kSub; ++i) {
          const int e = kSub * j + i;
          cand.qs[32 * (e / 128) + e % 32] |= static_cast<std::uint8_t>(code_for(x[e], dl, ml) << (2 * ((e % 128) / 32)));
        }
      }
      out = cand;
    }
  if (best == INFINITY) std::memset(&out, 0, sizeof out);  // non-finite input
}

}  // namespace first_version

std::vector<std::uint8_t> reference(const std::vector<float>& x) {
  std::vector<std::uint8_t> out(x.size() / 256 * 84);
  for (std::size_t b = 0; b < x.size() / 256; ++b) {
    first_version::BlockQ2K blk;
    first_version::quantize_block(x.data() + 256 * b, blk);
    std::memcpy(out.data() + 84 * b, &blk, 84);
  }
  return out;
}

TEST(Q2KIdentity, DISABLED_WriteBytesAtThisLevel) { kquant_identity::write_bytes_at_this_level("q2_k"); }

TEST(Q2KIdentity, SameBytesAsTheFirstVersionAtEverySimdLevel) {
  kquant_identity::expect_same_bytes_at_every_level("q2_k", 84, reference, "Q2KIdentity.DISABLED_WriteBytesAtThisLevel");
}

}  // namespace
