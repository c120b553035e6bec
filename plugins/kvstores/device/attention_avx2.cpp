// AVX2 + F16C attention kernels: one slot's 8 partial sums per register, 8 slots (one query head)
// or 4 slots (two heads) per batch folded at once; 8 columns per register for V. Compiled for AVX2
// by the target pragma; products accumulate with explicit FMA intrinsics, nothing else is contracted
// (the plugin builds with -ffp-contract=off).
#include "attention_kernels.hpp"
#include "cpu_features.hpp"
#include "formats/q4_0/block_q4_0.hpp"
#include "formats/q8_0/block_q8_0.hpp"
#include "half.hpp"
#include "softmax_exp.hpp"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,f16c,fma"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,f16c,fma")
#endif

#include "attention_x86.hpp"  // after the target pragma: compiled for this file's instructions

namespace graft::kv {

namespace {

#define GRAFT_KV_INLINE inline __attribute__((always_inline))

GRAFT_KV_INLINE __m256 load8(const std::uint16_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}
GRAFT_KV_INLINE __m256 load8(const float* p) { return _mm256_loadu_ps(p); }
// Elements e..e+7 of a row (e % 8 == 0), blocks decoded in registers (attention_x86.hpp).
template <class B>
GRAFT_KV_INLINE __m256 scale_at(const B* row, std::uint32_t e) {
  return _mm256_set1_ps(block_scale(row, e));
}
template <class T>
GRAFT_KV_INLINE __m256 load8(const T* row, std::uint32_t e) {
  if constexpr (elems_per_unit<T>() > 1)
    return _mm256_mul_ps(levels8(row, e), scale_at(row, e));
  else
    return load8(row + e);
}

// [a0..a3 + a4..a7 of x | the same of y]: the first round of the fold for two slots.
GRAFT_KV_INLINE __m256 halves(__m256 x, __m256 y) {
  return _mm256_add_ps(_mm256_permute2f128_ps(x, y, 0x20), _mm256_permute2f128_ps(x, y, 0x31));
}

// acc[i] holds the 8 partial sums of slot i. Returns the folds
// ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)) of S = 8 or 4 slots in slot order (lanes
// beyond S unspecified): the same three rounds of additions as one slot alone.
template <int S>
GRAFT_KV_INLINE __m256 fold(const __m256* acc) {
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  if constexpr (S == 8) {
    const __m256 c0 = _mm256_hadd_ps(halves(acc[0], acc[1]), halves(acc[2], acc[3]));  // slots 0,2 | 1,3
    const __m256 c1 = _mm256_hadd_ps(halves(acc[4], acc[5]), halves(acc[6], acc[7]));  // slots 4,6 | 5,7
    return _mm256_permutevar8x32_ps(_mm256_hadd_ps(c0, c1), order);  // before: 0,2,4,6 | 1,3,5,7
  } else {
    const __m256 c = _mm256_hadd_ps(halves(acc[0], acc[1]), halves(acc[2], acc[3]));
    return _mm256_permutevar8x32_ps(_mm256_hadd_ps(c, c), order);  // before: 0,2,0,2 | 1,3,1,3
  }
}

// NH query heads, 8 / NH slots per batch (8 accumulators).
template <int NH, class T>
void scores_nh(const float* const* q, const T* const* rows, std::uint32_t n, std::uint32_t d, float scale,
               float* const* out, std::uint32_t listed) {
  constexpr std::uint32_t S = 8 / NH;
  const __m256 vscale = _mm256_set1_ps(scale);
  for (std::uint32_t b0 = 0; b0 < n; b0 += S) {
    const std::uint32_t cnt = std::min(S, n - b0);
    for (std::uint32_t j = b0 + 32; j < std::min(listed, b0 + 32 + S); ++j) prefetch_row(rows[j], d);  // 32 rows ahead
    const T* r[S];  // a short batch repeats its last row; those lanes are not stored
    for (std::uint32_t j = 0; j < S; ++j) r[j] = rows[b0 + std::min(j, cnt - 1)];
    __m256 acc[NH][S];
    for (int h = 0; h < NH; ++h)
      for (std::uint32_t i = 0; i < S; ++i) acc[h][i] = _mm256_setzero_ps();
    if constexpr (elems_per_unit<T>() > 1) {
      // Blocks: each row's scale once per block, its four 8-element steps after.
      for (std::uint32_t e0 = 0; e0 < d; e0 += 32) {
        __m256 sc[S];
        for (std::uint32_t i = 0; i < S; ++i) sc[i] = scale_at(r[i], e0);
        for (std::uint32_t e = e0; e < e0 + 32; e += 8) {
          __m256 qv[NH];
          for (int h = 0; h < NH; ++h) qv[h] = _mm256_loadu_ps(q[h] + e);
          for (std::uint32_t i = 0; i < S; ++i) {
            const __m256 k = _mm256_mul_ps(levels8(r[i], e), sc[i]);
            for (int h = 0; h < NH; ++h) acc[h][i] = _mm256_fmadd_ps(qv[h], k, acc[h][i]);
          }
        }
      }
    } else {
      for (std::uint32_t e = 0; e < d; e += 8) {
        __m256 qv[NH];
        for (int h = 0; h < NH; ++h) qv[h] = _mm256_loadu_ps(q[h] + e);
        for (std::uint32_t i = 0; i < S; ++i) {
          const __m256 k = load8(r[i], e);
          for (int h = 0; h < NH; ++h) acc[h][i] = _mm256_fmadd_ps(qv[h], k, acc[h][i]);
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      // + 0: the portable kernel adds its (empty) scalar tail, which turns -0 into +0
      const __m256 s = _mm256_mul_ps(_mm256_add_ps(fold<S>(acc[h]), _mm256_setzero_ps()), vscale);
      if (cnt == S) {
        if constexpr (S == 8)
          _mm256_storeu_ps(out[h] + b0, s);
        else
          _mm_storeu_ps(out[h] + b0, _mm256_castps256_ps128(s));
      } else {
        alignas(32) float tmp[8];
        _mm256_store_ps(tmp, s);
        std::memcpy(out[h] + b0, tmp, cnt * sizeof(float));
      }
    }
  }
}

template <class T>
void scores(const float* const* q, std::uint32_t nh, const T* const* rows, std::uint32_t n, std::uint32_t d,
            float scale, float* const* out, std::uint32_t listed) {
  if (nh == 2)
    scores_nh<2>(q, rows, n, d, scale, out, listed);
  else
    scores_nh<1>(q, rows, n, d, scale, out, listed);
}

// acc + the sums of u[4l..4l+3] * s[4l..4l+3] per int32 lane l (u unsigned, s signed bytes):
// AVX-VNNI's VEX-encoded vpdpbusd, in assembly so that this file needs no VNNI target (the kernel
// that uses it runs only where the CPU has it).
GRAFT_KV_INLINE __m256i dpbusd(__m256i acc, __m256i u, __m256i s) {
  asm("%{vex%} vpdpbusd %2, %1, %0" : "+x"(acc) : "x"(u), "x"(s));
  return acc;
}

// Integer scores against q8_0 rows (attention_kernels.hpp), one row's block per register; lane l
// ends as the exact integer sum over elements 4l..4l+3, then one fused multiply-add by the two
// scales. With AVX-VNNI: the row's bytes plus 128 (unsigned) times q by vpdpbusd, started from
// -128 times q's sums so that the offset cancels. Without: maddubs of |k| with q carrying k's sign
// (|k|, |q| <= 127, so a pair never saturates int16), madd with ones.
template <int NH, bool Vnni>
void scores_q8_nh(const QueryQ8* q, const quant::block_q8_0* const* rows, std::uint32_t n, std::uint32_t d,
                  float scale, float* const* out, std::uint32_t listed) {
  constexpr std::uint32_t S = 8 / NH;
  const __m256 vscale = _mm256_set1_ps(scale);
  const __m256i ones = _mm256_set1_epi16(1);
  for (std::uint32_t b0 = 0; b0 < n; b0 += S) {
    const std::uint32_t cnt = std::min(S, n - b0);
    for (std::uint32_t j = b0 + 32; j < std::min(listed, b0 + 32 + S); ++j) prefetch_row(rows[j], d);
    const quant::block_q8_0* r[S];
    for (std::uint32_t j = 0; j < S; ++j) r[j] = rows[b0 + std::min(j, cnt - 1)];
    __m256 acc[NH][S];
    for (int h = 0; h < NH; ++h)
      for (std::uint32_t i = 0; i < S; ++i) acc[h][i] = _mm256_setzero_ps();
    for (std::uint32_t blk = 0; blk < d / 32; ++blk) {
      __m256i qv[NH], base[NH];
      __m256 dq[NH];
      for (int h = 0; h < NH; ++h) {
        qv[h] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[h].qs + 32 * blk));
        dq[h] = _mm256_set1_ps(q[h].d[blk]);
        if constexpr (Vnni)  // -128 * (q[4l] + .. + q[4l + 3]); 128 * a pair's sum fits int16
          base[h] = _mm256_sub_epi32(_mm256_setzero_si256(),
                                     _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(-128), qv[h]), ones));
      }
      for (std::uint32_t i = 0; i < S; ++i) {
        const __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(r[i][blk].qs));
        const __m256 dk = _mm256_set1_ps(_cvtsh_ss(r[i][blk].d));
        if constexpr (Vnni) {
          const __m256i ku = _mm256_xor_si256(k, _mm256_set1_epi8(-128));  // k + 128 as unsigned bytes
          for (int h = 0; h < NH; ++h) {
            const __m256i p = dpbusd(base[h], ku, qv[h]);
            acc[h][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dk, dq[h]), acc[h][i]);
          }
        } else {
          const __m256i ak = _mm256_sign_epi8(k, k);
          for (int h = 0; h < NH; ++h) {
            const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(ak, _mm256_sign_epi8(qv[h], k)), ones);
            acc[h][i] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_mul_ps(dk, dq[h]), acc[h][i]);
          }
        }
      }
    }
    for (int h = 0; h < NH; ++h) {
      const __m256 s = _mm256_mul_ps(_mm256_add_ps(fold<S>(acc[h]), _mm256_setzero_ps()), vscale);
      alignas(32) float tmp[8];
      _mm256_store_ps(tmp, s);
      std::memcpy(out[h] + b0, tmp, cnt * sizeof(float));
    }
  }
}

template <bool Vnni>
void scores_q8(const QueryQ8* q, std::uint32_t nh, const quant::block_q8_0* const* rows, std::uint32_t n,
               std::uint32_t d, float scale, float* const* out, std::uint32_t listed) {
  if (nh == 2)
    scores_q8_nh<2, Vnni>(q, rows, n, d, scale, out, listed);
  else
    scores_q8_nh<1, Vnni>(q, rows, n, d, scale, out, listed);
}

// Columns [c0, c0 + 8 NZ) of NH accumulator rows. The first tile (c0 == 0) also sums p and
// prefetches rows ahead.
template <int NZ, int NH, class T>
void values_tile(float* const* acc, float* sum, const float* const* p, const T* const* rows, std::uint32_t n,
                 std::uint32_t d, std::uint32_t c0, std::uint32_t listed) {
  constexpr std::uint32_t kAhead = 16;
  __m256 a[NH][NZ];
  float s[NH];
  for (int h = 0; h < NH; ++h) {
    s[h] = sum[h];
    for (int z = 0; z < NZ; ++z) a[h][z] = _mm256_loadu_ps(acc[h] + c0 + 8 * z);
  }
  for (std::uint32_t j = 0; j < n; ++j) {
    if (j + kAhead < listed) prefetch_row(rows[j + kAhead], d);
    const T* row = rows[j];
    __m256 w[NH];
    for (int h = 0; h < NH; ++h) {
      s[h] = s[h] + p[h][j];
      w[h] = _mm256_set1_ps(p[h][j]);
    }
    if constexpr (elems_per_unit<T>() > 1) {
      // Blocks: whole blocks per tile (d % 32 == 0), each block's scale converted once for its four registers.
      for (int z = 0; z < NZ; z += 4) {
        const __m256 sc = scale_at(row, c0 + 8 * z);
        for (int y = z; y < std::min(z + 4, NZ); ++y) {  // NZ is a multiple of 4 for blocks
          const __m256 v = _mm256_mul_ps(levels8(row, c0 + 8 * y), sc);
          for (int h = 0; h < NH; ++h) a[h][y] = _mm256_fmadd_ps(w[h], v, a[h][y]);
        }
      }
    } else {
      for (int z = 0; z < NZ; ++z) {
        const __m256 v = load8(row, c0 + 8 * z);
        for (int h = 0; h < NH; ++h) a[h][z] = _mm256_fmadd_ps(w[h], v, a[h][z]);
      }
    }
  }
  for (int h = 0; h < NH; ++h) {
    if (c0 == 0) sum[h] = s[h];
    for (int z = 0; z < NZ; ++z) _mm256_storeu_ps(acc[h] + c0 + 8 * z, a[h][z]);
  }
}

template <int NH, class T>
void values_nh(float* const* acc, float* sum, const float* const* p, const T* const* rows, std::uint32_t n,
               std::uint32_t d, std::uint32_t listed) {
  constexpr std::uint32_t kTile = 64 / NH;  // 8 accumulator registers
  for (std::uint32_t c0 = 0; c0 < d; c0 += kTile) {
    const std::uint32_t pf = c0 == 0 ? listed : 0;
    switch (std::min(kTile, d - c0) / 8) {
      case 1: values_tile<1, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      case 2: values_tile<2, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      case 3: values_tile<3, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      case 4: values_tile<4, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      case 5: values_tile<5, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      case 6: values_tile<6, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      case 7: values_tile<7, NH>(acc, sum, p, rows, n, d, c0, pf); break;
      default: values_tile<8, NH>(acc, sum, p, rows, n, d, c0, pf); break;
    }
  }
}

template <class T>
void values(float* const* acc, float* sum, const float* const* p, std::uint32_t nh, const T* const* rows,
            std::uint32_t n, std::uint32_t d, std::uint32_t listed) {
  if (nh == 2)
    values_nh<2>(acc, sum, p, rows, n, d, listed);
  else
    values_nh<1>(acc, sum, p, rows, n, d, listed);
}

void widen(const std::uint16_t* src, float* dst, std::uint32_t n) {
  for (std::uint32_t i = 0; i < n; i += 8) _mm256_storeu_ps(dst + i, load8(src + i));  // n % 8 == 0
}

// A chunk's rows of blocks decoded for the kernels above (verification and prefill): load8's values.
template <class B>
void decode(const void* src, float* dst, std::uint32_t n) {
  const auto* row = static_cast<const B*>(src);
  for (std::uint32_t c = 0; c < n; c += 8) _mm256_storeu_ps(dst + c, load8(row, c));
}

// vcvtps2ph: f32_to_f16 bit for bit (see the AVX-512 form); the tail in plain code.
void narrow(const float* src, std::uint16_t* dst, std::uint32_t n) {
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  for (; i < n; ++i) dst[i] = f32_to_f16(src[i]);
}

// max_ps(x, m) returns m when x is NaN, so NaN scores are skipped as std::max skips them.
float max_of(const float* x, std::uint32_t n) {
  __m256 m = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) m = _mm256_max_ps(_mm256_loadu_ps(x + i), m);
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, m);
  float r = lanes[0];
  for (int l = 1; l < 8; ++l) r = std::max(r, lanes[l]);
  for (; i < n; ++i) r = std::max(r, x[i]);  // std::max(r, NaN) is r
  return r;
}

// softmax_exp's operations on 8 lanes; the lanes it does not compute are blended in after.
__m256 softmax_exp8(__m256 x) {
  using namespace exp_poly;
  const __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m256 r = _mm256_sub_ps(_mm256_sub_ps(x, _mm256_mul_ps(n, _mm256_set1_ps(kLn2Hi))),
                                 _mm256_mul_ps(n, _mm256_set1_ps(kLn2Lo)));
  __m256 p = _mm256_set1_ps(kP0);
  for (const float c : {kP1, kP2, kP3, kP4, kP5}) p = _mm256_add_ps(_mm256_mul_ps(p, r), _mm256_set1_ps(c));
  const __m256 y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(p, _mm256_mul_ps(r, r)), r), _mm256_set1_ps(1.0f));
  const __m256i e = _mm256_slli_epi32(_mm256_cvtps_epi32(n), 23);
  __m256 out = _mm256_castsi256_ps(_mm256_add_epi32(_mm256_castps_si256(y), e));
  out = _mm256_blendv_ps(out, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(kSoftmaxExpMin), _CMP_LT_OQ));
  out = _mm256_blendv_ps(out, _mm256_set1_ps(std::numeric_limits<float>::infinity()),
                         _mm256_cmp_ps(x, _mm256_set1_ps(kSoftmaxExpMax), _CMP_GT_OQ));
  return _mm256_blendv_ps(out, x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

void exp_shifted(float* x, std::uint32_t n, float m) {
  const __m256 vm = _mm256_set1_ps(m);
  std::uint32_t i = 0;
  for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, softmax_exp8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vm)));
  for (; i < n; ++i) x[i] = softmax_exp(x[i] - m);
}

}  // namespace
}  // namespace graft::kv

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace graft::kv {
namespace {
template <bool Vnni>
const AttnKernels* table() noexcept {
  static const AttnKernels k{&scores<std::uint16_t>,
                             &scores<float>,
                             &values<std::uint16_t>,
                             &values<float>,
                             &scores_q8<Vnni>,
                             &values<quant::block_q8_0>,
                             &scores<quant::block_q4_0>,
                             &values<quant::block_q4_0>,
                             &scores<block_tq3>,
                             &values<block_tq3>,
                             &widen,
                             &decode<quant::block_q8_0>,
                             &decode<quant::block_q4_0>,
                             &decode<block_tq3>,
                             &narrow,
                             &max_of,
                             &exp_shifted,
                             8};
  return &k;
}
}  // namespace

// Compiled for the baseline ISA: callers ask for the table before they know the CPU has AVX2.
const AttnKernels* attn_kernels_avx2() noexcept { return cpu_features().avxvnni ? table<true>() : table<false>(); }
const AttnKernels* attn_kernels_avx2_without_vnni() noexcept { return table<false>(); }
}  // namespace graft::kv

#else

namespace graft::kv {
const AttnKernels* attn_kernels_avx2() noexcept { return nullptr; }
const AttnKernels* attn_kernels_avx2_without_vnni() noexcept { return nullptr; }
}  // namespace graft::kv

#endif
