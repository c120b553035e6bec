// Q2_K: super-blocks of 256 weights (84 bytes), 16 sub-blocks of 16 with a 4-bit scale and a 4-bit
// min each, y = (d * sc) * q - (dmin * m). Dequantization is ggml's dequantize_row_q2_K bit for bit.
//
// The quantizer is ours (ggml's quantize_row_q2_K_ref minimises a |x|-weighted absolute error; we
// minimise the squared error, which is what the RMSE we report measures):
//  1. per sub-block, a continuous least-squares fit x ~ a * l + b (b <= 0, l in 0..3) over a sweep
//     of trial steps, like ggml's make_qkx2_quants;
//  2. d = fp16(max a / 15), dmin = fp16(max -b / 15), each tried at a few shrink factors;
//  3. per sub-block, the 4-bit (sc, m) pair near the fit that minimises the squared error of the
//     dequantized values (codes = nearest level), evaluated exactly as dequantize computes them.
// Measured against a per-block grid-search optimum in tests/quant/q2_k_test.cpp (docs/formats_kquants.md).
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "driver/block_format.hpp"
#include "families/kquants/q2_k_gemm.hpp"
#include "families/kquants/q2_k_packed.hpp"
#include "formats/q2_k/block_q2_k.hpp"
#include "half.hpp"
#include "simd/gnu_vectors.hpp"
#include "simd/level_quantizer.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

constexpr int kSub = 16;  // sub-block length

// The quantizer's functions are inlined into one entry point per x86 level (target attributes,
// see x86_simd.hpp), so the lane width W is 4 (SSE2), 8 (AVX2) or 16 (AVX-512); each lane does the
// same IEEE operations at every width (no fused multiply-adds: -ffp-contract=off).
#define Q2K_INLINE [[gnu::always_inline]] inline

// Made ~5x faster without changing a byte (tests/quant/q2_k_identity_test.cpp keeps the first
// version as the reference): rounding to a code is done by comparisons, not nearbyint (a libm call
// on baseline x86-64); step 3 compares with per-scale thresholds instead of dividing per element
// and evaluates W candidates at once, one per lane; step 1 computes a sub-block's 16 codes in one
// vector and skips a trial step whose codes repeat the step before. Every f32 and f64 operation
// whose result is compared or stored is the one the first version did, in the same order.

// The code nearbyint would give for t in 0..3 (half to even, default rounding mode): 0 on
// (0, 0.5], 1 on (0.5, 1.5), 2 on [1.5, 2.5], 3 on (2.5, 3); t >= 3 gives 3, t <= 0 and NaN 0.
inline int code3(float t) { return (t > 0.5f) + (t >= 1.5f) + (t > 2.5f); }

// Nearest integer in 0..nmax (half to even); NaN gives 0, so non-finite input stays defined.
// t - i is exact (i <= t < 2i, or i = 0), so the half test is exact.
inline int clamp_code(float t, int nmax) {
  if (!(t > 0.0f)) return 0;
  if (t >= static_cast<float>(nmax)) return nmax;
  int i = static_cast<int>(t);
  const float f = t - static_cast<float>(i);
  if (f > 0.5f || (f == 0.5f && (i & 1))) ++i;
  return i;
}

// The code of x for one sub-block's dequantization dl * q - ml.
inline int code_for(float x, float dl, float ml) { return dl > 0.0f ? code3((x + ml) / dl) : 0; }

// Step 1: least-squares (scale a >= 0, offset b <= 0) with codes from a sweep of trial steps.
Q2K_INLINE void fit_sub_block(const float* x, float& scale, float& neg_min) {
  using F = Vectors<16>::F;  // one sub-block: 1 AVX-512, 2 AVX2 or 4 SSE registers
  using I = Vectors<16>::I;
  float lo = x[0], hi = x[0];
  for (int i = 1; i < kSub; ++i) {
    lo = std::min(lo, x[i]);
    hi = std::max(hi, x[i]);
  }
  if (lo > 0.0f) lo = 0.0f;
  scale = 0.0f;
  neg_min = -lo;
  if (!(hi > lo)) return;
  double sx = 0;
  for (int i = 0; i < kSub; ++i) sx += x[i];
  F xv;
  std::memcpy(&xv, x, sizeof xv);
  const F xl = xv - lo;  // x - lo, as every trial step computes it
  float best = INFINITY;
  I prev = {};
  bool have_prev = false;
  for (int step = -1; step <= 15; ++step) {
    // step -1 is the plain range fit; 0..15 sweep the trial step around it as ggml does.
    const float iscale = step < 0 ? 3.0f / (hi - lo) : (3.0f - 0.5f + 0.1f * static_cast<float>(step)) / (hi - lo);
    const F t = iscale * xl;
    const I lv = -((t > 0.5f) + (t >= 1.5f) + (t > 2.5f));  // code3 per lane (a true compare is -1)
    // The same codes as the step just before give the same err, scale and offset, and leave the
    // state as that step left it (re-taking its own result changes nothing). Only the step just
    // before: best is kept in f32, so an earlier step's double err could compare differently.
    const I diff = lv ^ prev;
    std::uint64_t w[sizeof diff / 8];
    std::memcpy(w, &diff, sizeof diff);
    std::uint64_t any = 0;
    for (const std::uint64_t v : w) any |= v;
    if (have_prev && any == 0) continue;
    have_prev = true;
    prev = lv;
    int l[kSub];
    std::memcpy(l, &lv, sizeof l);
    // sl and sl2 are small integers, exact in any order; sxl is summed in element order.
    int isl = 0, isl2 = 0;
    double sxl = 0;
    for (int i = 0; i < kSub; ++i) {
      isl += l[i];
      isl2 += l[i] * l[i];
      sxl += static_cast<double>(x[i]) * l[i];
    }
    const double sl = isl, sl2 = isl2;
    if (!(sl2 > 0)) continue;
    // One distinct code (det = 0) leaves only the b = 0 fit.
    const double det = kSub * sl2 - sl * sl;
    double a = det > 0 ? (kSub * sxl - sx * sl) / det : 0, b = det > 0 ? (sl2 * sx - sl * sxl) / det : 1;
    if (b > 0) {
      b = 0;
      a = sxl / sl2;
    }
    if (a < 0) continue;
    const double level[4] = {a * 0 + b, a * 1 + b, a * 2 + b, a * 3 + b};  // a * l + b for each code
    double err = 0;
    for (int i = 0; i < kSub; ++i) {
      const double e = level[l[i]] - x[i];
      err += e * e;
    }
    if (err < best) {
      best = static_cast<float>(err);
      scale = static_cast<float>(a);
      neg_min = static_cast<float>(-b);
    }
  }
}

// Step 3 decides code3(fl((x + ml) / dl)) without dividing. With q the exact quotient, s = x + ml
// and dl > 0 finite, in round-to-nearest-even (no FTZ/DAZ):
//   fl(q) >  0.5 <=> q >  0.5 + 2^-25  (the midpoint above 0.5 ties to 0.5, the even one)
//   fl(q) >= 1.5 <=> q >= 1.5 - 2^-24  (the midpoint below 1.5 ties to 1.5)
//   fl(q) >  2.5 <=> q >  2.5 + 2^-23  (the midpoint above 2.5 ties to 2.5)
// so each test is s against bound * dl, a product of 25 and 24 significant bits that is exact in
// double, and, s being a float, against the first float past that bound.
struct Thresholds {
  float t1, t2, t3;  // code = (s >= t1) + (s >= t2) + (s >= t3)
};

// f, or the next float up when `up` (f >= 0 finite).
inline float up_if(float f, bool up) { return std::bit_cast<float>(std::bit_cast<std::uint32_t>(f) + up); }

inline Thresholds thresholds(float dl) {
  if (!(dl > 0.0f && dl < INFINITY)) return {NAN, NAN, NAN};  // code 0 (inf: s / inf is 0 or NaN)
  const double b1 = (0.5 + 0x1p-25) * dl, b2 = (1.5 - 0x1p-24) * dl, b3 = (2.5 + 0x1p-23) * dl;
  // The float nearest b, or the next one up when that is below b (without a branch: which one it
  // is depends on the data).
  auto above = [](double b) {  // the smallest float > b (b > 0)
    const auto f = static_cast<float>(b);
    return up_if(f, !(static_cast<double>(f) > b));
  };
  auto at_least = [](double b) {  // the smallest float >= b
    const auto f = static_cast<float>(b);
    return up_if(f, !(static_cast<double>(f) >= b));
  };
  return {above(b1), at_least(b2), above(b3)};
}

// Step 3 for one sub-block: the best 4-bit (sc, m) within +-2 of the fit, and its squared error.
// Candidates are taken in the order sc-major, m-minor and the first strict minimum wins; each
// lane sums its 16 squared errors in element order, as the scalar loop did.
template <int W>
Q2K_INLINE float choose_codes(const float* x, float d, float dmin, float a, float neg_min, std::uint8_t& packed) {
  using F = typename Vectors<W>::F;
  using I = typename Vectors<W>::I;
  const int sc0 = d > 0.0f ? clamp_code(a / d, 15) : 0;
  const int m0 = dmin > 0.0f ? clamp_code(neg_min / dmin, 15) : 0;
  constexpr int kGroups = (25 + W - 1) / W, kMax = W * kGroups;  // 25 candidates in whole lane groups
  alignas(64) float dl[kMax] = {}, ml[kMax] = {}, t1[kMax], t2[kMax], t3[kMax], err[kMax];
  std::uint8_t pk[kMax];
  int n = 0;
  for (int sc = std::max(0, sc0 - 2); sc <= std::min(15, sc0 + 2); ++sc) {
    const float dls = d * static_cast<float>(sc);
    const Thresholds t = thresholds(dls);
    for (int m = std::max(0, m0 - 2); m <= std::min(15, m0 + 2); ++m) {
      dl[n] = dls;
      ml[n] = dmin * static_cast<float>(m);
      t1[n] = t.t1;
      t2[n] = t.t2;
      t3[n] = t.t3;
      pk[n++] = static_cast<std::uint8_t>(sc | (m << 4));
    }
  }
  for (int c = n; c < kMax; ++c) ml[c] = t1[c] = t2[c] = t3[c] = NAN;  // spare lanes: err NaN, never taken
  const int groups = (n + W - 1) / W;
  F e2[kGroups] = {};
  const I one = (I)(F{} + 1.0f);  // 1.0f in every lane
  for (int i = 0; i < kSub; ++i)
    for (int g = 0; g < groups; ++g) {
      F vdl, vml, v1, v2, v3;  // memcpy, not a function returning a vector: no ABI change across targets
      std::memcpy(&vdl, dl + W * g, sizeof vdl);
      std::memcpy(&vml, ml + W * g, sizeof vml);
      std::memcpy(&v1, t1 + W * g, sizeof v1);
      std::memcpy(&v2, t2 + W * g, sizeof v2);
      std::memcpy(&v3, t3 + W * g, sizeof v3);
      const F s = x[i] + vml;
      const I q1 = s >= v1, q2 = s >= v2, q3 = s >= v3;
      const F q = (F)(q1 & one) + (F)(q2 & one) + (F)(q3 & one);  // vector casts keep the bits
      const F e = vdl * q - vml - x[i];
      e2[g] += e * e;
    }
  for (int g = groups; g < kGroups; ++g) e2[g] = F{} + NAN;
  std::memcpy(err, e2, sizeof e2);
  // The first strict minimum below infinity, NaN never taken: the minimum first (min is exact, so
  // any order gives it: lanes, then halves), then its first position.
  F lane_min = F{} + INFINITY;
  for (int g = 0; g < groups; ++g) lane_min = e2[g] < lane_min ? e2[g] : lane_min;
  float m[W];
  std::memcpy(m, &lane_min, sizeof m);
  for (int h = W / 2; h >= 1; h /= 2)
    for (int k = 0; k < h; ++k) m[k] = m[k + h] < m[k] ? m[k + h] : m[k];
  const float best = m[0];
  if (best < INFINITY) {
    int c = 0;
    while (!(err[c] == best)) ++c;
    packed = pk[c];
  }
  return best;
}

template <int W>
Q2K_INLINE void quantize_block(const float* x, block_q2_k& out) {
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
      block_q2_k cand{};
      cand.d = f32_to_f16_ggml(max_a * fd / 15.0f);
      cand.dmin = f32_to_f16_ggml(max_m * fm / 15.0f);
      const float d = f16_to_f32(cand.d), dmin = f16_to_f32(cand.dmin);
      float err = 0.0f;
      for (int j = 0; j < 16 && err < best; ++j)
        err += choose_codes<W>(x + kSub * j, d, dmin, a[j], nm[j], cand.scales[j]);
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

struct Q2KQuantizer {
  using Block = block_q2_k;
  static constexpr std::int64_t kElems = kQK_K;
  template <int W>
  Q2K_INLINE static void block(const float* x, Block& out) { quantize_block<W>(x, out); }
};

// ggml's dequantize_row_q2_K: dl = d * sc and ml = dmin * m in f32, then dl * q - ml.
void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* blocks = static_cast<const block_q2_k*>(src);
  for (std::int64_t i = 0; i < k / kQK_K; ++i) {
    const block_q2_k& b = blocks[i];
    const float d = f16_to_f32(b.d), dmin = f16_to_f32(b.dmin);
    for (int e = 0; e < kQK_K; ++e) {
      const int j = e / 16;
      const float dl = d * static_cast<float>(b.scales[j] & 15), ml = dmin * static_cast<float>(b.scales[j] >> 4);
      y[i * kQK_K + e] = dl * static_cast<float>(q2k_code(b, e)) - ml;
    }
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q2_k, .name = "q2_k", .block_elems = kQK_K, .block_bytes = sizeof(block_q2_k)},
    .quantize_row = &LevelQuantizer<Q2KQuantizer>::quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_k,
    // amx: the packed layout's AMX batches (the amx level always reads the packed layout; the
    // file's layout, where a caller passes no prepared weights, runs the avx512 kernel).
    .gemm = {.scalar = &q2_k_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q2_k_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q2_k_gemm_avx512),
             .amx = GRAFT_X86_KERNEL(&q2_k_gemm_avx512)},
    .avx512_pairs = true,  // AVX-512 batches read the column pairs
    .packed = {&kQ2_KRows4},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q2_k",
    "Q2_K weights (ggml id 10): 2-bit quants, 4-bit scales and mins per 16, fp16 super-scales per 256; "
    "CPU kernels on Q8_K activations",
    &block_format_factory<kSpec>)
