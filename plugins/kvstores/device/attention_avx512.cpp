// AVX-512 attention kernels: 16 slots per batch for scores (two slots' 8 partial sums per
// register, folded for all 16 at once), 16 columns per register for V. Compiled for AVX-512 by
// the target pragma; products accumulate with explicit FMA intrinsics, nothing else is contracted
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

#if !defined(__clang__) && __GNUC__ < 13
// GCC 12's avx512fintrin.h trips -W(maybe-)uninitialized on its own _mm512_undefined_* (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,fma"))), \
                             apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,f16c,fma")
#endif

#include "attention_x86.hpp"  // after the target pragma: compiled for this file's instructions

namespace graft::kv {

namespace {

#define GRAFT_KV_INLINE inline __attribute__((always_inline))

// Elements 8e..8e+7 of rows a and b as [a | b].
GRAFT_KV_INLINE __m512 load_pair(const std::uint16_t* a, const std::uint16_t* b) {
  const __m256i h = _mm256_inserti128_si256(_mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a))),
                                            _mm_loadu_si128(reinterpret_cast<const __m128i*>(b)), 1);
  return _mm512_cvtph_ps(h);
}
GRAFT_KV_INLINE __m512 load_pair(const float* a, const float* b) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(_mm256_loadu_ps(a))),
                                             _mm256_castps_pd(_mm256_loadu_ps(b)), 1));
}

// Levels (before the scale) of elements ea..ea+7 of block row a and eb..eb+7 of row b as [a | b]:
// ggml's integers converted, tq3's looked up in the level table by a permute (attention_x86.hpp).
template <class B>
GRAFT_KV_INLINE __m512 levels16(const B* a, std::uint32_t ea, const B* b, std::uint32_t eb) {
  if constexpr (std::is_same_v<B, block_tq3>) {
    const __m512i w = _mm512_inserti64x4(_mm512_set1_epi32(tq3_bits(a, ea)), _mm256_set1_epi32(tq3_bits(b, eb)), 1);
    const __m512i code = _mm512_and_si512(
        _mm512_srlv_epi32(w, _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 0, 2, 4, 6, 8, 10, 12, 14)),
        _mm512_set1_epi32(3));
    const __m512i sign = _mm512_and_si512(
        _mm512_srlv_epi32(w, _mm512_setr_epi32(14, 15, 16, 17, 18, 19, 20, 21, 14, 15, 16, 17, 18, 19, 20, 21)),
        _mm512_set1_epi32(4));
    return _mm512_permutexvar_ps(_mm512_or_si512(code, sign), _mm512_broadcast_f32x8(_mm256_loadu_ps(kTq3Levels)));
  } else {
    return _mm512_cvtepi32_ps(_mm512_inserti64x4(_mm512_castsi256_si512(ints8(a, ea)), ints8(b, eb), 1));
  }
}

// Elements e..e+7 of rows a and b as [a | b], from blocks.
template <class B>
GRAFT_KV_INLINE __m512 load_pair(const B* a, const B* b, std::uint32_t e) {
  const __m512 d = _mm512_insertf32x8(_mm512_set1_ps(block_scale(a, e)), _mm256_set1_ps(block_scale(b, e)), 1);
  return _mm512_mul_ps(levels16(a, e, b, e), d);
}
GRAFT_KV_INLINE __m512 load_pair(const std::uint16_t* a, const std::uint16_t* b, std::uint32_t e) {
  return load_pair(a + e, b + e);
}
GRAFT_KV_INLINE __m512 load_pair(const float* a, const float* b, std::uint32_t e) { return load_pair(a + e, b + e); }

// 16 columns of a row (masked: lanes outside m read nothing and come back 0).
GRAFT_KV_INLINE __m512 load16(const std::uint16_t* p, __mmask16 m) {
  return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
}
GRAFT_KV_INLINE __m512 load16(const float* p, __mmask16 m) { return _mm512_maskz_loadu_ps(m, p); }
// Columns c..c+15 (c % 16 == 0) of a row: plain rows from c, blocks decoded (half a block).
// Levels (before the scale) of columns c..c+15 (c % 16 == 0) of a row of blocks; q8_0's 16 bytes
// widened by one vpmovsxbd.
template <class B>
GRAFT_KV_INLINE __m512 levels16(const B* row, std::uint32_t c) {
  if constexpr (std::is_same_v<B, quant::block_q8_0>)
    return _mm512_cvtepi32_ps(
        _mm512_cvtepi8_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row[c / 32].qs + c % 32))));
  else
    return levels16(row, c, row, c + 8);
}
template <class T>
GRAFT_KV_INLINE __m512 load16(const T* row, std::uint32_t c, __mmask16 m) {
  if constexpr (elems_per_unit<T>() > 1) {
    return _mm512_maskz_mul_ps(m, levels16(row, c), _mm512_set1_ps(block_scale(row, c)));
  } else {
    return load16(row + c, m);
  }
}

// acc[i] holds the 8 partial sums of slot 2i (low half) and slot 2i+1 (high half). Returns the 16
// folds ((a0 + a4) + (a1 + a5)) + ((a2 + a6) + (a3 + a7)) in slot order: the same three rounds of
// additions as one slot alone, done for all slots by pairing lanes with shuffles instead.
GRAFT_KV_INLINE __m512 fold16(const __m512* acc) {
  __m512 b[4];  // b[k], quarter j: a0..a3 + a4..a7 of slot 4k + j
  for (int k = 0; k < 4; ++k) {
    const __m512 x = acc[2 * k], y = acc[2 * k + 1];
    b[k] = _mm512_add_ps(_mm512_shuffle_f32x4(x, y, 0x88), _mm512_shuffle_f32x4(x, y, 0xDD));
  }
  __m512 c[2];  // c[k], quarter j: (b0 + b1), (b2 + b3) of slots 8k + j and 8k + 4 + j
  for (int k = 0; k < 2; ++k) {
    const __m512 x = b[2 * k], y = b[2 * k + 1];
    c[k] = _mm512_add_ps(_mm512_shuffle_ps(x, y, 0x88), _mm512_shuffle_ps(x, y, 0xDD));
  }
  // quarter j: the folds of slots j, 4 + j, 8 + j, 12 + j
  const __m512 f = _mm512_add_ps(_mm512_shuffle_ps(c[0], c[1], 0x88), _mm512_shuffle_ps(c[0], c[1], 0xDD));
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, f);
}

template <int NH, class T>
void scores_nh(const float* const* q, const T* const* rows, std::uint32_t n, std::uint32_t d, float scale,
               float* const* out, std::uint32_t listed) {
  const __m512 vscale = _mm512_set1_ps(scale);
  for (std::uint32_t b0 = 0; b0 < n; b0 += 16) {
    const std::uint32_t cnt = std::min(16u, n - b0);
    for (std::uint32_t j = b0 + 32; j < std::min(listed, b0 + 48); ++j) prefetch_row(rows[j], d);  // 2 batches ahead
    const T* r[16];  // a short batch repeats its last row; those lanes are not stored
    for (std::uint32_t j = 0; j < 16; ++j) r[j] = rows[b0 + std::min(j, cnt - 1)];
    __m512 acc[NH][8];
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < 8; ++i) acc[h][i] = _mm512_setzero_ps();
    if constexpr (elems_per_unit<T>() > 1) {
      // Blocks: each row pair's scales once per block, its four 8-element steps after.
      for (std::uint32_t e0 = 0; e0 < d; e0 += 32) {
        __m512 sc[8];
        for (int i = 0; i < 8; ++i)
          sc[i] = _mm512_insertf32x8(_mm512_set1_ps(block_scale(r[2 * i], e0)),
                                     _mm256_set1_ps(block_scale(r[2 * i + 1], e0)), 1);
        for (std::uint32_t e = e0; e < e0 + 32; e += 8) {
          __m512 qq[NH];
          for (int h = 0; h < NH; ++h) qq[h] = _mm512_broadcast_f32x8(_mm256_loadu_ps(q[h] + e));
          for (int i = 0; i < 8; ++i) {
            const __m512 k = _mm512_mul_ps(levels16(r[2 * i], e, r[2 * i + 1], e), sc[i]);
            for (int h = 0; h < NH; ++h) acc[h][i] = _mm512_fmadd_ps(qq[h], k, acc[h][i]);
          }
        }
      }
    } else {
      for (std::uint32_t e = 0; e < d; e += 8) {
        __m512 qq[NH];
        for (int h = 0; h < NH; ++h) qq[h] = _mm512_broadcast_f32x8(_mm256_loadu_ps(q[h] + e));
        for (int i = 0; i < 8; ++i) {
          const __m512 k = load_pair(r[2 * i], r[2 * i + 1], e);
          for (int h = 0; h < NH; ++h) acc[h][i] = _mm512_fmadd_ps(qq[h], k, acc[h][i]);
        }
      }
    }
    const __mmask16 m = static_cast<__mmask16>((1u << cnt) - 1u);
    for (int h = 0; h < NH; ++h) {
      // + 0: the portable kernel adds its (empty) scalar tail, which turns -0 into +0
      const __m512 s = _mm512_mul_ps(_mm512_add_ps(fold16(acc[h]), _mm512_setzero_ps()), vscale);
      _mm512_mask_storeu_ps(out[h] + b0, m, s);
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

// acc + the sums of u[4l..4l+3] * s[4l..4l+3] per int32 lane l (u unsigned, s signed bytes): VNNI's
// vpdpbusd, in assembly so that this file needs no VNNI target (the kernel that uses it runs only
// where the CPU has it).
GRAFT_KV_INLINE __m512i dpbusd(__m512i acc, __m512i u, __m512i s) {
  asm("vpdpbusd %2, %1, %0" : "+v"(acc) : "v"(u), "v"(s));
  return acc;
}

// Integer scores against q8_0 rows (attention_kernels.hpp), two rows' block per register; lane l of
// each half ends as the exact integer sum over elements 4l..4l+3 of its row's block, then one fused
// multiply-add by the two scales per lane and block. With VNNI: the row's bytes plus 128 (unsigned)
// times q by vpdpbusd, started from -128 times q's sums so that the offset cancels. Without: |k|
// times q carrying k's sign by maddubs (|k|, |q| <= 127: no int16 pair saturates), madd with ones.
template <int NH, bool Vnni>
void scores_q8_nh(const QueryQ8* q, const quant::block_q8_0* const* rows, std::uint32_t n, std::uint32_t d,
                  float scale, float* const* out, std::uint32_t listed) {
  const __m512 vscale = _mm512_set1_ps(scale);
  const __m512i ones = _mm512_set1_epi16(1);
  for (std::uint32_t b0 = 0; b0 < n; b0 += 16) {
    const std::uint32_t cnt = std::min(16u, n - b0);
    for (std::uint32_t j = b0 + 32; j < std::min(listed, b0 + 48); ++j) prefetch_row(rows[j], d);  // 2 batches ahead
    const quant::block_q8_0* r[16];  // a short batch repeats its last row; those lanes are not stored
    for (std::uint32_t j = 0; j < 16; ++j) r[j] = rows[b0 + std::min(j, cnt - 1)];
    __m512 acc[NH][8];
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < 8; ++i) acc[h][i] = _mm512_setzero_ps();
    for (std::uint32_t blk = 0; blk < d / 32; ++blk) {
      __m512i qv[NH], base[NH];
      __m512 dq[NH];
      for (int h = 0; h < NH; ++h) {
        qv[h] = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(q[h].qs + 32 * blk)));
        dq[h] = _mm512_set1_ps(q[h].d[blk]);
        if constexpr (Vnni)  // -128 * (q[4l] + .. + q[4l + 3]); 128 * a pair's sum fits int16
          base[h] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                     _mm512_madd_epi16(_mm512_maddubs_epi16(_mm512_set1_epi8(-128), qv[h]), ones));
      }
      for (int i = 0; i < 8; ++i) {
        const quant::block_q8_0& ka = r[2 * i][blk];
        const quant::block_q8_0& kb = r[2 * i + 1][blk];
        const __m512i k = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(ka.qs))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kb.qs)), 1);
        const __m512 dk = _mm512_insertf32x8(_mm512_set1_ps(_cvtsh_ss(ka.d)), _mm256_set1_ps(_cvtsh_ss(kb.d)), 1);
        if constexpr (Vnni) {
          const __m512i ku = _mm512_xor_si512(k, _mm512_set1_epi8(-128));  // k + 128 as unsigned bytes
          for (int h = 0; h < NH; ++h) {
            const __m512i p = dpbusd(base[h], ku, qv[h]);
            acc[h][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dk, dq[h]), acc[h][i]);
          }
        } else {
          const __m512i ak = _mm512_abs_epi8(k);
          const __mmask64 neg = _mm512_movepi8_mask(k);
          for (int h = 0; h < NH; ++h) {
            const __m512i sq = _mm512_mask_sub_epi8(qv[h], neg, _mm512_setzero_si512(), qv[h]);
            const __m512i p = _mm512_madd_epi16(_mm512_maddubs_epi16(ak, sq), ones);
            acc[h][i] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(p), _mm512_mul_ps(dk, dq[h]), acc[h][i]);
          }
        }
      }
    }
    const __mmask16 m = static_cast<__mmask16>((1u << cnt) - 1u);
    for (int h = 0; h < NH; ++h) {
      const __m512 s = _mm512_mul_ps(_mm512_add_ps(fold16(acc[h]), _mm512_setzero_ps()), vscale);
      _mm512_mask_storeu_ps(out[h] + b0, m, s);
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

// Columns [c0, c0 + 16 NZ) of NH accumulator rows; the last register takes the lanes in `last`.
// The first tile (c0 == 0) also sums p and prefetches rows ahead.
template <int NZ, int NH, class T>
void values_tile(float* const* acc, float* sum, const float* const* p, const T* const* rows, std::uint32_t n,
                 std::uint32_t d, std::uint32_t c0, __mmask16 last, std::uint32_t listed) {
  constexpr std::uint32_t kAhead = 16;
  __m512 a[NH][NZ];
  float s[NH];
  for (int h = 0; h < NH; ++h) {
    s[h] = sum[h];
    for (int z = 0; z < NZ; ++z) a[h][z] = _mm512_maskz_loadu_ps(z == NZ - 1 ? last : 0xFFFF, acc[h] + c0 + 16 * z);
  }
  for (std::uint32_t j = 0; j < n; ++j) {
    if (j + kAhead < listed) prefetch_row(rows[j + kAhead], d);
    const T* row = rows[j];
    __m512 w[NH];
    for (int h = 0; h < NH; ++h) {
      s[h] = s[h] + p[h][j];
      w[h] = _mm512_set1_ps(p[h][j]);
    }
    if constexpr (elems_per_unit<T>() > 1) {
      // Blocks: whole blocks per tile (d % 32 == 0), each block's scale converted once for its two registers.
      for (int z = 0; z < NZ; z += 2) {
        const __m512 sc = _mm512_set1_ps(block_scale(row, c0 + 16 * z));
        for (int y = z; y < std::min(z + 2, NZ); ++y) {  // NZ is even for blocks; odd only in unused instances
          const __m512 v = _mm512_mul_ps(levels16(row, c0 + 16 * y), sc);
          for (int h = 0; h < NH; ++h) a[h][y] = _mm512_fmadd_ps(w[h], v, a[h][y]);
        }
      }
    } else {
      for (int z = 0; z < NZ; ++z) {
        const __m512 v = load16(row, c0 + 16 * z, z == NZ - 1 ? last : 0xFFFF);
        for (int h = 0; h < NH; ++h) a[h][z] = _mm512_fmadd_ps(w[h], v, a[h][z]);
      }
    }
  }
  for (int h = 0; h < NH; ++h) {
    if (c0 == 0) sum[h] = s[h];
    for (int z = 0; z < NZ; ++z) _mm512_mask_storeu_ps(acc[h] + c0 + 16 * z, z == NZ - 1 ? last : 0xFFFF, a[h][z]);
  }
}

template <int NH, class T>
void values_nh(float* const* acc, float* sum, const float* const* p, const T* const* rows, std::uint32_t n,
               std::uint32_t d, std::uint32_t listed) {
  constexpr std::uint32_t kTile = 128;  // 8 registers per head: 16 accumulators for two heads
  for (std::uint32_t c0 = 0; c0 < d; c0 += kTile) {
    const std::uint32_t w = std::min(kTile, d - c0), rem = w % 16;
    const auto last = static_cast<__mmask16>(rem ? (1u << rem) - 1u : 0xFFFFu);
    const std::uint32_t pf = c0 == 0 ? listed : 0;
    switch ((w + 15) / 16) {
      case 1: values_tile<1, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      case 2: values_tile<2, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      case 3: values_tile<3, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      case 4: values_tile<4, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      case 5: values_tile<5, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      case 6: values_tile<6, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      case 7: values_tile<7, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
      default: values_tile<8, NH>(acc, sum, p, rows, n, d, c0, last, pf); break;
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

// A chunk's rows of blocks decoded for the kernels above (verification and prefill): load16's values.
template <class B>
void decode(const void* src, float* dst, std::uint32_t n) {
  const auto* row = static_cast<const B*>(src);
  for (std::uint32_t c = 0; c < n; c += 16) _mm512_storeu_ps(dst + c, load16(row, c, 0xFFFF));
}

void widen(const std::uint16_t* src, float* dst, std::uint32_t n) {
  std::uint32_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  for (; i < n; i += 8)  // n % 8 == 0
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
}

// vcvtps2ph rounds to nearest even with subnormals and keeps a NaN's sign and top payload bits
// (quieted): f32_to_f16 bit for bit (kvF16.EverySimdNarrowGivesTheScalarBits).
void narrow(const float* src, std::uint16_t* dst, std::uint32_t n) {
  std::uint32_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst + i),
                        _mm512_cvtps_ph(_mm512_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm256_mask_storeu_epi16(dst + i, tail,
                             _mm512_cvtps_ph(_mm512_maskz_loadu_ps(tail, src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
  }
}

// max_ps(x, m) returns m when x is NaN, so NaN scores are skipped as std::max skips them.
float max_of(const float* x, std::uint32_t n) {
  __m512 m = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  std::uint32_t i = 0;
  for (; i + 16 <= n; i += 16) m = _mm512_max_ps(_mm512_loadu_ps(x + i), m);
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    m = _mm512_mask_max_ps(m, tail, _mm512_maskz_loadu_ps(tail, x + i), m);
  }
  return _mm512_reduce_max_ps(m);
}

// softmax_exp's operations on 16 lanes; the lanes it does not compute are blended in after.
__m512 softmax_exp16(__m512 x) {
  using namespace exp_poly;
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  const __m512 r = _mm512_sub_ps(_mm512_sub_ps(x, _mm512_mul_ps(n, _mm512_set1_ps(kLn2Hi))),
                                 _mm512_mul_ps(n, _mm512_set1_ps(kLn2Lo)));
  __m512 p = _mm512_set1_ps(kP0);
  for (const float c : {kP1, kP2, kP3, kP4, kP5}) p = _mm512_add_ps(_mm512_mul_ps(p, r), _mm512_set1_ps(c));
  const __m512 y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(p, _mm512_mul_ps(r, r)), r), _mm512_set1_ps(1.0f));
  const __m512i e = _mm512_slli_epi32(_mm512_cvtps_epi32(n), 23);
  __m512 out = _mm512_castsi512_ps(_mm512_add_epi32(_mm512_castps_si512(y), e));
  out = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kSoftmaxExpMin), _CMP_LT_OQ), out, _mm512_setzero_ps());
  out = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, _mm512_set1_ps(kSoftmaxExpMax), _CMP_GT_OQ), out,
                             _mm512_set1_ps(std::numeric_limits<float>::infinity()));
  return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q), out, x);
}

void exp_shifted(float* x, std::uint32_t n, float m) {
  const __m512 vm = _mm512_set1_ps(m);
  std::uint32_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(x + i, softmax_exp16(_mm512_sub_ps(_mm512_loadu_ps(x + i), vm)));
  if (i < n) {
    const auto tail = static_cast<__mmask16>((1u << (n - i)) - 1u);
    _mm512_mask_storeu_ps(x + i, tail, softmax_exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(tail, x + i), vm)));
  }
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

// Compiled for the baseline ISA: callers ask for the table before they know the CPU has AVX-512.
const AttnKernels* attn_kernels_avx512() noexcept {
  return cpu_features().avx512vnni ? table<true>() : table<false>();
}
const AttnKernels* attn_kernels_avx512_without_vnni() noexcept { return table<false>(); }
}  // namespace graft::kv

#else

namespace graft::kv {
const AttnKernels* attn_kernels_avx512() noexcept { return nullptr; }
const AttnKernels* attn_kernels_avx512_without_vnni() noexcept { return nullptr; }
}  // namespace graft::kv

#endif
