// The Q4_K tile for AVX2 and AVX-512 (256-bit f32 lanes, the scalar definition's order). Include
// once per translation unit after defining GRAFT_Q4K_TARGET (the level's target attribute) and
// GRAFT_Q4K_AVX512 (0 or 1: which integer dot). Each weight block of the tile's rows is unpacked
// once into an L1 buffer (codes as bytes in element order, each sub-block scale broadcast over 16
// int16), which every activation column of the tile then reads with plain loads.
#pragma once

#include <cstdint>
#include <cstring>

#include "gemm.hpp"
#include "q4_k_block.hpp"
#include "x86_simd.hpp"

#if !defined(GRAFT_Q4K_TARGET) || !defined(GRAFT_Q4K_AVX512)
#error "define GRAFT_Q4K_TARGET and GRAFT_Q4K_AVX512 before including q4_k_x86.hpp"
#endif

namespace graft::quant {
namespace {

struct alignas(64) Q4KPrep {
  std::uint8_t q[kQK_K];
  std::int16_t sc[8][16];  // sub-block j's scale in all 16 int16 lanes of row j
  std::int16_t mins[8];
  float d, ndmin;          // fp16 d and -dmin
};

GRAFT_Q4K_TARGET inline void prepare(const std::uint8_t* blk, const float* fp16, Q4KPrep& p) {
  std::uint16_t h[2];
  std::memcpy(h, blk, 4);
  p.d = fp16[h[0]];
  p.ndmin = -fp16[h[1]];
  std::uint8_t sc[8], m[8];
  unpack_scales_k4(blk + 4, sc, m);
  _Pragma("GCC unroll 8")
  for (int j = 0; j < 8; ++j) _mm256_store_si256(reinterpret_cast<__m256i*>(p.sc[j]), _mm256_set1_epi16(sc[j]));
  std::uint64_t m8;
  std::memcpy(&m8, m, 8);
  _mm_store_si128(reinterpret_cast<__m128i*>(p.mins), _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<long long>(m8))));
  const __m256i low = _mm256_set1_epi8(0x0F);
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * j));
    _mm256_store_si256(reinterpret_cast<__m256i*>(p.q + 64 * j), _mm256_and_si256(v, low));
    _mm256_store_si256(reinterpret_cast<__m256i*>(p.q + 64 * j + 32), _mm256_and_si256(_mm256_srli_epi16(v, 4), low));
  }
}

// The 8 exact lane sums S[l] of the definition.
GRAFT_Q4K_TARGET inline __m256i block_dot(const Q4KPrep& p, const std::int8_t* x) {
#if GRAFT_Q4K_AVX512
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j) {
    const __m512i prod = _mm512_maddubs_epi16(_mm512_load_si512(p.q + 64 * j), _mm512_loadu_si512(x + 64 * j));
    s = _mm512_dpwssd_epi32(s, prod, _mm512_load_si512(p.sc[2 * j]));
  }
  return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
#else
  __m256i s = _mm256_setzero_si256();
  _Pragma("GCC unroll 8")
  for (int j = 0; j < 8; ++j) {
    const __m256i prod = _mm256_maddubs_epi16(_mm256_load_si256(reinterpret_cast<const __m256i*>(p.q + 32 * j)),
                                              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * j)));
    s = _mm256_add_epi32(s, _mm256_madd_epi16(prod, _mm256_load_si256(reinterpret_cast<const __m256i*>(p.sc[j]))));
  }
  return s;
#endif
}

struct X86Q4K {
  template <int R, int C>
  GRAFT_Q4K_TARGET static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    Q4KPrep prep[R];
    __m256 acc[R][C];
    __m128 accm[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        acc[i][j] = _mm256_setzero_ps();
        accm[i][j] = _mm_setzero_ps();
      }
    for (std::int64_t b = 0; b < nb; ++b) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * sizeof(BlockQ4_K);
        // The next tile's rows: keeps enough misses in flight for one core to stream at memory speed.
        const char* next = reinterpret_cast<const char*>(blk + R * a.w_stride);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
        _mm_prefetch(next + 143, _MM_HINT_T0);
        prepare(blk, a.fp16, prep[i]);
      }
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        const std::int8_t* x = a.xk->block_qs(c + j, b);
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
        // Sums of the 8 sub-blocks of 32: [bs0+bs1, bs2+bs3, ...].
        const __m128i sums = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
        const __m256 dx = _mm256_set1_ps(a.xk->scale(c + j, b));
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          const __m256 d = _mm256_mul_ps(_mm256_set1_ps(prep[i].d), dx);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(prep[i], x)), d, acc[i][j]);
          const __m128 dmin = _mm_mul_ps(_mm_set1_ps(prep[i].ndmin), _mm256_castps256_ps128(dx));
          const __m128i mm = _mm_madd_epi16(_mm_load_si128(reinterpret_cast<const __m128i*>(prep[i].mins)), sums);
          accm[i][j] = _mm_fmadd_ps(_mm_cvtepi32_ps(mm), dmin, accm[i][j]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        __m128 m = accm[i][j];
        m = _mm_add_ps(m, _mm_movehl_ps(m, m));
        m = _mm_add_ss(m, _mm_movehdup_ps(m));
        a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]) + _mm_cvtss_f32(m);
      }
  }
};

}  // namespace
}  // namespace graft::quant
