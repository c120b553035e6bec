// The Q3_K quantizer was made faster without changing its output: its first version
// (plugins/quant/formats/q3_k/q3_k_format.cpp before the speed-up, copied verbatim below but for names) is
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

struct BlockQ3K {
  std::uint8_t hmask[32];
  std::uint8_t qs[64];
  std::uint8_t scales[12];
  std::uint16_t d;
};
static_assert(sizeof(BlockQ3K) == 110);

constexpr int kSub = 16;

// Nearest integer in lo..hi (half to even); NaN gives 0.
inline int clamp_code(float t, int lo, int hi) {
  if (!(t == t)) return 0;
  if (t <= static_cast<float>(lo)) return lo;
  if (t >= static_cast<float>(hi)) return hi;
  return static_cast<int>(std::nearbyint(t));
}

inline int code_for(float x, float dl) { return dl != 0.0f ? clamp_code(x / dl, -4, 3) : 0; }

// Step 1: the least-squares scale a (x ~ a * q) over trial steps of both signs.
float fit_sub_block(const float* x) {
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < kSub; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (!(amax > 0.0f)) return 0.0f;
  float best_gain = -1.0f, best = 0.0f;
  // Trial iscale = t / max: t near -4 maps the largest value to code -4, t near 3 to code 3.
  for (int side = 0; side < 2; ++side)
    for (int s = -9; s <= 9; ++s) {
      const float iscale = (side == 0 ? -4.0f : 3.0f) * (1.0f + 0.025f * static_cast<float>(s)) / max;
      double sxl = 0, sl2 = 0;
      for (int i = 0; i < kSub; ++i) {
        const int l = clamp_code(iscale * x[i], -4, 3);
        sxl += static_cast<double>(x[i]) * l;
        sl2 += l * l;
      }
      if (!(sl2 > 0)) continue;
      // The squared error is sum x^2 - sxl^2 / sl2 at the best scale sxl / sl2.
      const auto gain = static_cast<float>(sxl * sxl / sl2);
      if (gain > best_gain) {
        best_gain = gain;
        best = static_cast<float>(sxl / sl2);
      }
    }
  return best;
}

// Step 3 for one sub-block: the best 6-bit scale within +-2 of the fit, and its squared error.
float choose_scale(const float* x, float d, float a, int& best_sc) {
  const int s0 = d != 0.0f ? clamp_code(a / d, -32, 31) : 0;
  float best = INFINITY;
  best_sc = 0;
  for (int sc = std::max(-32, s0 - 2); sc <= std::min(31, s0 + 2); ++sc) {
    const float dl = d * static_cast<float>(sc);
    float err = 0.0f;
    for (int i = 0; i < kSub; ++i) {
      const float e = dl * static_cast<float>(code_for(x[i], dl)) - x[i];
      err += e * e;
    }
    if (err < best) {
      best = err;
      best_sc = sc;
    }
  }
  return best;
}

void pack(const float* x, float d, const int* sc, std::uint16_t dh, BlockQ3K& out) {
  std::memset(&out, 0, sizeof out);
  out.d = dh;
  for (int j = 0; j < 16; ++j) {
    const int l = sc[j] + 32;
    out.scales[j % 8] |= static_cast<std::uint8_t>((l & 15) << (4 * (j / 8)));
    out.scales[8 + j % 4] |= static_cast<std::uint8_t>((l >> 4) << (2 * (j / 4)));
    const float dl = d * static_cast<float>(sc[j]);
    for (int i = 0; i < kSub; ++i) {
      const int e = kSub * j + i;
      const int u = code_for(x[e], dl) + 4;  // 0..7
      out.qs[32 * (e / 128) + e % 32] |= static_cast<std::uint8_t>((u & 3) << (2 * ((e % 128) / 32)));
      out.hmask[e % 32] |= static_cast<std::uint8_t>((u >> 2) << (e / 32));
    }
  }
}

void quantize_block(const float* x, BlockQ3K& out) {
  float a[16];
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 16; ++j) {
    a[j] = fit_sub_block(x + kSub * j);
    if (std::fabs(a[j]) > amax) {
      amax = std::fabs(a[j]);
      max = a[j];
    }
  }
  float best = INFINITY;
  int sc[16], best_sc[16] = {};
  std::uint16_t best_d = 0;
  for (float target : {-32.0f, 31.0f})
    for (float shrink : {1.0f, 0.96f, 0.92f}) {
      const std::uint16_t dh = f32_to_f16_ggml(max * shrink / target);
      const float d = f16_to_f32(dh);
      float err = 0.0f;
      for (int j = 0; j < 16 && err < best; ++j) err += choose_scale(x + kSub * j, d, a[j], sc[j]);
      if (err < best) {
        best = err;
        best_d = dh;
        std::memcpy(best_sc, sc, sizeof sc);
      }
    }
  if (best == INFINITY) {  // non-finite input
    std::memset(&out, 0, sizeof out);
    return;
  }
  pack(x, f16_to_f32(best_d), best_sc, best_d, out);
}

}  // namespace first_version

std::vector<std::uint8_t> reference(const std::vector<float>& x) {
  std::vector<std::uint8_t> out(x.size() / 256 * 110);
  for (std::size_t b = 0; b < x.size() / 256; ++b) {
    first_version::BlockQ3K blk;
    first_version::quantize_block(x.data() + 256 * b, blk);
    std::memcpy(out.data() + 110 * b, &blk, 110);
  }
  return out;
}

TEST(Q3KIdentity, DISABLED_WriteBytesAtThisLevel) { kquant_identity::write_bytes_at_this_level("q3_k"); }

TEST(Q3KIdentity, SameBytesAsTheFirstVersionAtEverySimdLevel) {
  kquant_identity::expect_same_bytes_at_every_level("q3_k", 110, reference, "Q3KIdentity.DISABLED_WriteBytesAtThisLevel");
}

}  // namespace
