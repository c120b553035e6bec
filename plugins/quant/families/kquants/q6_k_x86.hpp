// The Q6_K tile for AVX2 and AVX-512 (256-bit f32 lanes, the scalar definition's order). Include
// once per translation unit after defining GRAFT_Q6K_TARGET (the level's target attribute) and
// GRAFT_Q6K_AVX512 (0 or 1). Each weight block is decoded once per tile into vectors (codes
// u = q + 32 as bytes in element order, each sub-block's scale in the int16 lanes its products
// land in, and the 16 scales for the -32 correction); a one-column tile uses them from registers.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "driver/gemm.hpp"
#include "formats/q6_k/block_q6_k.hpp"
#include "simd/x86_simd.hpp"

#if !defined(GRAFT_Q6K_TARGET) || !defined(GRAFT_Q6K_AVX512)
#error "define GRAFT_Q6K_TARGET and GRAFT_Q6K_AVX512 before including q6_k_x86.hpp"
#endif

namespace graft::quant {
namespace {

#if GRAFT_Q6K_AVX512
constexpr int kVecs = 4;  // 64 codes (four sub-blocks) per vector
using VecI = __m512i;
// vpermw indices: int16 lane t of vector j takes scale 4j + t / 8.
constexpr auto kScaleIndex = [] {
  std::array<std::int16_t, 4 * 32> t{};
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) t[static_cast<std::size_t>(32 * j + l)] = static_cast<std::int16_t>(4 * j + l / 8);
  return t;
}();
#else
constexpr int kVecs = 8;  // 32 codes (two sub-blocks) per vector
using VecI = __m256i;
#endif

struct Q6KDecoded {
  VecI u[kVecs];
  VecI sc[kVecs];
  __m256i sc16;  // the 16 scales as int16
  float d;
};

GRAFT_Q6K_TARGET inline __attribute__((always_inline)) void decode(const std::uint8_t* blk, const float* fp16,
                                                                    Q6KDecoded& p) {
  std::uint16_t h;
  std::memcpy(&h, blk + 208, 2);
  p.d = fp16[h];
  const __m128i sc8 = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 192));
  p.sc16 = _mm256_cvtepi8_epi16(sc8);
  const std::uint8_t* ql = blk;
  const std::uint8_t* qh = blk + 128;
#if GRAFT_Q6K_AVX512
  const __m512i sc512 = _mm512_castsi256_si512(p.sc16);
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j) p.sc[j] = _mm512_permutexvar_epi16(_mm512_loadu_si512(kScaleIndex.data() + 32 * j), sc512);
  const __m512i low = _mm512_set1_epi8(0x0F), top = _mm512_set1_epi8(0x30);
  _Pragma("GCC unroll 2")
  for (int n = 0; n < 2; ++n) {
    const __m512i v = _mm512_loadu_si512(ql + 64 * n);
    const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * n)));
    // Elements 0..31 take qh bits 0-1, 32..63 bits 2-3, 64..95 bits 4-5, 96..127 bits 6-7 (as bits 4-5).
    const __m512i h01 = _mm512_and_si512(_mm512_sllv_epi64(hb, _mm512_setr_epi64(4, 4, 4, 4, 2, 2, 2, 2)), top);
    const __m512i h23 = _mm512_and_si512(_mm512_srlv_epi64(hb, _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2)), top);
    p.u[2 * n] = _mm512_or_si512(_mm512_and_si512(v, low), h01);
    p.u[2 * n + 1] = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(v, 4), low), h23);
  }
#else
  const __m256i sc2 = _mm256_broadcastsi128_si256(sc8);
  _Pragma("GCC unroll 8")
  for (int c = 0; c < 8; ++c) {
    // Bytes 0..7 = scale 2c, 8..15 = scale 2c + 1, widened: int16 lanes 0..7 and 8..15.
    const __m128i pick = _mm_unpacklo_epi64(_mm_set1_epi8(static_cast<char>(2 * c)), _mm_set1_epi8(static_cast<char>(2 * c + 1)));
    p.sc[c] = _mm256_cvtepi8_epi16(_mm_shuffle_epi8(_mm256_castsi256_si128(sc2), pick));
  }
  const __m256i low = _mm256_set1_epi8(0x0F), top = _mm256_set1_epi8(0x30);
  _Pragma("GCC unroll 2")
  for (int n = 0; n < 2; ++n) {
    const __m256i v0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * n));
    const __m256i v1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(ql + 64 * n + 32));
    const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qh + 32 * n));
    p.u[4 * n] = _mm256_or_si256(_mm256_and_si256(v0, low), _mm256_and_si256(_mm256_slli_epi16(hb, 4), top));
    p.u[4 * n + 1] = _mm256_or_si256(_mm256_and_si256(v1, low), _mm256_and_si256(_mm256_slli_epi16(hb, 2), top));
    p.u[4 * n + 2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v0, 4), low), _mm256_and_si256(hb, top));
    p.u[4 * n + 3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(v1, 4), low),
                                     _mm256_and_si256(_mm256_srli_epi16(hb, 2), top));
  }
#endif
}

#if GRAFT_Q6K_AVX512
// Before the fold and the -32 correction: lanes l and l + 8 together make U[l].
GRAFT_Q6K_TARGET inline __attribute__((always_inline)) __m512i block_dot512(const Q6KDecoded& p, const std::int8_t* x) {
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j)
    s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(p.u[j], _mm512_loadu_si512(x + 64 * j)), p.sc[j]);
  return s;
}

GRAFT_Q6K_TARGET inline __m512 join(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

// Batches at AVX-512: tiles of 4 rows whose f32 lane work runs two rows per 512-bit register
// (rows 2h and 2h + 1 in the low and high halves); every lane sees exactly the operations of the
// 256-bit form.
template <int C>
GRAFT_Q6K_TARGET void paired_tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
  const std::int64_t nb = a.k / kQK_K;
  __m512 acc[2][C];
  _Pragma("GCC unroll 8")
  for (int j = 0; j < C; ++j) acc[0][j] = acc[1][j] = _mm512_setzero_ps();
  for (std::int64_t b = 0; b < nb; ++b) {
    Q6KDecoded p[4];
    _Pragma("GCC unroll 4")
    for (int i = 0; i < 4; ++i) {
      const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * sizeof(block_q6_k);
      const char* next = reinterpret_cast<const char*>(blk + 4 * a.w_stride);
      _mm_prefetch(next, _MM_HINT_T0);
      _mm_prefetch(next + 64, _MM_HINT_T0);
      _mm_prefetch(next + 128, _MM_HINT_T0);
      _mm_prefetch(next + 209, _MM_HINT_T0);
      decode(blk, a.fp16, p[i]);
    }
    const __m512 dw[2] = {join(_mm256_set1_ps(p[0].d), _mm256_set1_ps(p[1].d)),
                          join(_mm256_set1_ps(p[2].d), _mm256_set1_ps(p[3].d))};
    const __m512i sc[2] = {_mm512_inserti64x4(_mm512_castsi256_si512(p[0].sc16), p[1].sc16, 1),
                           _mm512_inserti64x4(_mm512_castsi256_si512(p[2].sc16), p[3].sc16, 1)};
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) {
      const std::int8_t* x = a.xk->block_qs(c + j, b);
      const __m512 dx = _mm512_set1_ps(a.xk->scale(c + j, b));
      const __m512i bs = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b))));
      _Pragma("GCC unroll 2")
      for (int h = 0; h < 2; ++h) {
        const __m512i s0 = block_dot512(p[2 * h], x), s1 = block_dot512(p[2 * h + 1], x);
        const __m512i u = x86::fold_pair(s0, s1);
        const __m512i sum = _mm512_sub_epi32(u, _mm512_slli_epi32(_mm512_madd_epi16(bs, sc[h]), 5));
        acc[h][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dw[h], dx), acc[h][j]);
      }
    }
  }
  _Pragma("GCC unroll 8")
  for (int j = 0; j < C; ++j) {
    float* y = a.y + (c + j) * a.y_stride + r;
    _Pragma("GCC unroll 2")
    for (int h = 0; h < 2; ++h) x86::store_hsum8_halves(acc[h][j], y + 2 * h, y + 2 * h + 1);
  }
}
#endif

// The 8 exact lane sums S[l] of the definition.
GRAFT_Q6K_TARGET inline __attribute__((always_inline)) __m256i block_dot(const Q6KDecoded& p, const std::int8_t* x,
                                                                          __m256i bs) {
#if GRAFT_Q6K_AVX512
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j)
    s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(p.u[j], _mm512_loadu_si512(x + 64 * j)), p.sc[j]);
  const __m256i u = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
#else
  __m256i u = _mm256_setzero_si256();
  _Pragma("GCC unroll 8")
  for (int c = 0; c < 8; ++c) {
    const __m256i prod = _mm256_maddubs_epi16(p.u[c], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * c)));
    u = _mm256_add_epi32(u, _mm256_madd_epi16(prod, p.sc[c]));
  }
#endif
  return _mm256_sub_epi32(u, _mm256_slli_epi32(_mm256_madd_epi16(bs, p.sc16), 5));
}

struct X86Q6K {
  template <int R, int C>
  GRAFT_Q6K_TARGET static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
#if GRAFT_Q6K_AVX512
    if constexpr (R == 4 && C > 1) {
      paired_tile<C>(a, r, c);
      return;
    }
#endif
    const std::int64_t nb = a.k / kQK_K;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int8_t* x[C];
      __m256i bs[C];
      __m256 dx[C];
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        x[j] = a.xk->block_qs(c + j, b);
        bs[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
        dx[j] = _mm256_set1_ps(a.xk->scale(c + j, b));
      }
      auto row_block = [&](int i) {
        const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * sizeof(block_q6_k);
#if GRAFT_Q6K_AVX512
        // The next tile's rows: keeps enough misses in flight for one core to stream at memory speed.
        const char* next = reinterpret_cast<const char*>(blk + R * a.w_stride);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
        _mm_prefetch(next + 128, _MM_HINT_T0);
        _mm_prefetch(next + 209, _MM_HINT_T0);
#else
        const char* ahead = x86::tile_stream_ahead(a.w, a.w_stride, r, R, b, i, sizeof(block_q6_k));
        _Pragma("GCC unroll 4")
        for (std::size_t o = 0; o < sizeof(block_q6_k); o += 64) _mm_prefetch(ahead + o, _MM_HINT_T1);
#endif
        return blk;
      };
      auto accumulate = [&](const Q6KDecoded& p, int i, int j) GRAFT_Q6K_TARGET {
        const __m256 d = _mm256_mul_ps(_mm256_set1_ps(p.d), dx[j]);
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(p, x[j], bs[j])), d, acc[i][j]);
      };
      if constexpr (C == 1) {
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          Q6KDecoded p;
          decode(row_block(i), a.fp16, p);
          accumulate(p, i, 0);
        }
      } else {
        Q6KDecoded p[R];
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) decode(row_block(i), a.fp16, p[i]);
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j)
          _Pragma("GCC unroll 8")
          for (int i = 0; i < R; ++i) accumulate(p[i], i, j);
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

}  // namespace
}  // namespace graft::quant
