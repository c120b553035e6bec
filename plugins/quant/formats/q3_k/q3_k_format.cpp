// Q3_K: super-blocks of 256 weights (110 bytes), 16 sub-blocks of 16 with a signed 6-bit scale,
// y = (d * (s - 32)) * q, q in -4..3. Dequantization is ggml's dequantize_row_q3_K bit for bit.
//
// The quantizer is ours (ggml's quantize_row_q3_K_ref weights its fit by x^2; we minimise the plain
// squared error that the reported RMSE measures):
//  1. per sub-block, the least-squares scale over a sweep of trial steps (either sign: the code
//     range -4..3 is asymmetric);
//  2. d = fp16(-a_max / 32) (the largest fit to code -32) or fp16(a_max / 31), at a few shrink
//     factors;
//  3. per sub-block, the 6-bit scale within +-2 of the fit that minimises the squared error of the
//     dequantized values (codes = nearest level), evaluated exactly as dequantize computes them.
// Measured against a per-block grid-search optimum in tests/quant/q3_k_test.cpp (docs/formats_kquants.md).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "driver/block_format.hpp"
#include "families/kquants/q3_k_gemm.hpp"
#include "formats/q3_k/block_q3_k.hpp"
#include "half.hpp"
#include "simd/gnu_vectors.hpp"
#include "simd/level_quantizer.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

constexpr int kSub = 16;

// Made faster without changing a byte (docs/formats_kquants.md) (tests/quant/q3_k_identity_test.cpp keeps the
// first version as the reference): rounding to a code is done by comparisons, not nearbyint (a
// libm call on baseline x86-64); step 1 codes a sub-block's 16 values in one vector and skips a
// trial step whose codes repeat the step before; step 3 tries its five scales at once, one per
// lane. Every f32 and f64 operation whose result is compared or stored is the one the first
// version did, in the same order. The functions are inlined into one entry point per x86 level
// (target attributes, see x86_simd.hpp); each lane does the same IEEE operations at every level.
#define Q3K_INLINE [[gnu::always_inline]] inline

// Nearest integer in lo..hi (half to even); NaN gives 0.
inline int clamp_code(float t, int lo, int hi) {
  if (!(t == t)) return 0;
  if (t <= static_cast<float>(lo)) return lo;
  if (t >= static_cast<float>(hi)) return hi;
  int i = static_cast<int>(t);  // toward zero
  const float f = t - static_cast<float>(i);  // exact (Sterbenz, or i = 0), sign of t
  if (f > 0.5f || (f == 0.5f && (i & 1))) ++i;
  if (f < -0.5f || (f == -0.5f && (i & 1))) --i;
  return i;
}

// clamp_code(t, -4, 3) per lane: nearbyint in the default rounding mode passes -3.5 only above it
// (-3.5 ties to -4), -2.5 from it on (ties to -2), -1.5 above, -0.5 from on, 0.5 above, 1.5 from
// on, 2.5 above; t <= -4 passes none, t >= 3 all seven, NaN gives 0.
template <typename F, typename I>
Q3K_INLINE void code_lanes(const F& t, I& code) {
  const I n = (t > -3.5f) + (t >= -2.5f) + (t > -1.5f) + (t >= -0.5f) + (t > 0.5f) + (t >= 1.5f) + (t > 2.5f);
  code = (-n - 4) & (t == t);  // a true comparison is -1
}

inline int code_for(float x, float dl) { return dl != 0.0f ? clamp_code(x / dl, -4, 3) : 0; }

// Step 1: the least-squares scale a (x ~ a * q) over trial steps of both signs.
template <int W>
Q3K_INLINE float fit_sub_block(const float* x) {
  using F = typename Vectors<W>::F;
  using I = typename Vectors<W>::I;
  constexpr int kV = kSub / W;  // vectors per sub-block
  float amax = 0.0f, max = 0.0f;
  for (int i = 0; i < kSub; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  if (!(amax > 0.0f)) return 0.0f;
  F xv[kV];
  std::memcpy(xv, x, sizeof xv);
  float best_gain = -1.0f, best = 0.0f;
  I prev[kV] = {};
  bool have_prev = false;
  // Trial iscale = t / max: t near -4 maps the largest value to code -4, t near 3 to code 3.
  for (int side = 0; side < 2; ++side)
    for (int s = -9; s <= 9; ++s) {
      const float iscale = (side == 0 ? -4.0f : 3.0f) * (1.0f + 0.025f * static_cast<float>(s)) / max;
      I lv[kV];
      I diff = {};
      for (int v = 0; v < kV; ++v) {
        code_lanes<F, I>(iscale * xv[v], lv[v]);
        diff |= lv[v] ^ prev[v];
      }
      // The step just before had the same codes: same gain, and a float gain equal to one already
      // compared never passes `gain > best_gain` again.
      std::uint64_t w[sizeof diff / 8];
      std::memcpy(w, &diff, sizeof diff);
      std::uint64_t any = 0;
      for (const std::uint64_t u : w) any |= u;
      if (have_prev && any == 0) continue;
      have_prev = true;
      std::memcpy(prev, lv, sizeof lv);
      int l[kSub];
      std::memcpy(l, lv, sizeof l);
      double sxl = 0;
      int isl2 = 0;  // a small integer: exact in any order
      for (int i = 0; i < kSub; ++i) {
        sxl += static_cast<double>(x[i]) * l[i];
        isl2 += l[i] * l[i];
      }
      const double sl2 = isl2;
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

// Step 3 for one sub-block: the best 6-bit scale within +-2 of the fit, and its squared error;
// the first strict minimum wins, each lane summing its errors in element order.
template <int W>
Q3K_INLINE float choose_scale(const float* x, float d, float a, int& best_sc) {
  using F = typename Vectors<W>::F;
  using I = typename Vectors<W>::I;
  constexpr int kGroups = (5 + W - 1) / W;
  const int s0 = d != 0.0f ? clamp_code(a / d, -32, 31) : 0;
  const int lo = std::max(-32, s0 - 2), n = std::min(31, s0 + 2) - lo + 1;
  alignas(64) float dl[W * kGroups], err[W * kGroups];
  for (int c = 0; c < W * kGroups; ++c) dl[c] = c < n ? d * static_cast<float>(lo + c) : NAN;  // spare: err NaN
  F vdl[kGroups], e2[kGroups] = {};
  I live[kGroups];
  std::memcpy(vdl, dl, sizeof vdl);
  for (int g = 0; g < kGroups; ++g) live[g] = vdl[g] != 0.0f;  // dl = 0 codes everything 0
  for (int i = 0; i < kSub; ++i)
    for (int g = 0; g < kGroups; ++g) {
      I q;
      code_lanes<F, I>(x[i] / vdl[g], q);
      const F e = vdl[g] * __builtin_convertvector(q & live[g], F) - x[i];
      e2[g] += e * e;
    }
  std::memcpy(err, e2, sizeof err);
  float best = INFINITY;
  best_sc = 0;
  for (int c = 0; c < n; ++c)
    if (err[c] < best) {
      best = err[c];
      best_sc = lo + c;
    }
  return best;
}

void pack(const float* x, float d, const int* sc, std::uint16_t dh, block_q3_k& out) {
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

template <int W>
Q3K_INLINE void quantize_block(const float* x, block_q3_k& out) {
  float a[16];
  float amax = 0.0f, max = 0.0f;
  for (int j = 0; j < 16; ++j) {
    a[j] = fit_sub_block<W>(x + kSub * j);
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
      for (int j = 0; j < 16 && err < best; ++j) err += choose_scale<(W > 8 ? 8 : W)>(x + kSub * j, d, a[j], sc[j]);
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

// (Step 3's five scales fill 8 lanes at most: at 16 lanes they are tried on AVX2 widths.)
struct Q3KQuantizer {
  using Block = block_q3_k;
  static constexpr std::int64_t kElems = kQK_K;
  template <int W>
  Q3K_INLINE static void block(const float* x, Block& out) { quantize_block<W>(x, out); }
};

// ggml's dequantize_row_q3_K: dl = d * (s - 32) in f32, then dl * q.
void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* blocks = static_cast<const block_q3_k*>(src);
  for (std::int64_t i = 0; i < k / kQK_K; ++i) {
    const block_q3_k& b = blocks[i];
    const float d = f16_to_f32(b.d);
    for (int e = 0; e < kQK_K; ++e) {
      const float dl = d * static_cast<float>(q3k_scale(b.scales, e / 16) - 32);
      y[i * kQK_K + e] = dl * static_cast<float>(q3k_code(b, e));
    }
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q3_k, .name = "q3_k", .block_elems = kQK_K, .block_bytes = sizeof(block_q3_k)},
    .quantize_row = &LevelQuantizer<Q3KQuantizer>::quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &q3_k_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q3_k_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q3_k_gemm_avx512)},
    .avx512_pairs = true,  // AVX-512 batches read the column pairs
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q3_k",
    "Q3_K weights (ggml id 11): 3-bit quants, 6-bit scales per 16, fp16 super-scale per 256; "
    "CPU kernels on Q8_K activations",
    &block_format_factory<kSpec>)
