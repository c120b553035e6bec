// AVX-512 VNNI TQ2_0 kernel: codes (0..2) for 64 elements per step by a broadcast load and per-half
// variable shift, vpdpbusd against the Q8_K quants onto lanes that start from
// -(bsum[2l] + bsum[2l+1]); the two 256-bit halves are added (exact integers) into ggml's 8 lanes.
// Batches keep two activation columns per 512-bit register for that f32 work (lanes 0..7 column c,
// 8..15 column c + 1), halving it; the integer work was already 512 bits wide.
#include "families/ternary/tq2_0_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

struct TQ2Avx512 {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / 256;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m512i shift_lo = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    const __m512i shift_hi = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
    const __m256i neg = _mm256_set1_epi16(-1);
    for (std::int64_t b = 0; b < nb; ++b) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = w[i] + b * 66;
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride + 65), _MM_HINT_T0);
        __m512i q[4];
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; ++h) {
          const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * h)));
          q[2 * h] = _mm512_and_si512(_mm512_srlv_epi64(bits, shift_lo), m3);
          q[2 * h + 1] = _mm512_and_si512(_mm512_srlv_epi64(bits, shift_hi), m3);
        }
        const float dw = a.fp16[blk[64] | (blk[65] << 8)];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const std::int8_t* xq = a.xk->block_qs(c + j, b);
          const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
          __m512i sum = _mm512_castsi256_si512(_mm256_madd_epi16(bs, neg));
          sum = _mm512_inserti64x4(sum, _mm256_setzero_si256(), 1);
          _Pragma("GCC unroll 4")
          for (int z = 0; z < 4; ++z) sum = _mm512_dpbusd_epi32(sum, q[z], _mm512_loadu_si512(xq + 64 * z));
          const __m256i s = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
          const __m256 d = _mm256_set1_ps(a.xk->scale(c + j, b) * dw);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc[i][j]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

struct TQ2Avx512Pairs {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    if constexpr (C % 2 != 0) {
      TQ2Avx512::tile<R, C>(a, r, c);
    } else {
      constexpr int P = C / 2;
      const std::int64_t nb = a.k / 256;
      const std::uint8_t* w[R];
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
      __m512 acc[R][P];
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
      const __m512i m3 = _mm512_set1_epi8(3);
      const __m512i shift_lo = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
      const __m512i shift_hi = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
      for (std::int64_t b = 0; b < nb; ++b) {
        __m512 dxv[P];
        __m512i corr[P];
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) {
          const std::int64_t c0 = c + 2 * p;
          dxv[p] = _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_set1_ps(a.xk->scale(c0, b))),
                                                       _mm256_castps_pd(_mm256_set1_ps(a.xk->scale(c0 + 1, b))), 1));
          const __m512i bsp = _mm512_inserti64x4(
              _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c0, b)))),
              _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c0 + 1, b))), 1);
          corr[p] = _mm512_madd_epi16(bsp, _mm512_set1_epi16(-1));
        }
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          const std::uint8_t* blk = w[i] + b * 66;
          _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride + 65), _MM_HINT_T0);
          __m512i q[4];
          _Pragma("GCC unroll 2")
          for (int h = 0; h < 2; ++h) {
            const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 32 * h)));
            q[2 * h] = _mm512_and_si512(_mm512_srlv_epi64(bits, shift_lo), m3);
            q[2 * h + 1] = _mm512_and_si512(_mm512_srlv_epi64(bits, shift_hi), m3);
          }
          const __m512 dw = _mm512_set1_ps(a.fp16[blk[64] | (blk[65] << 8)]);
          _Pragma("GCC unroll 8")
          for (int p = 0; p < P; ++p) {
            const std::int8_t* x0 = a.xk->block_qs(c + 2 * p, b);
            const std::int8_t* x1 = a.xk->block_qs(c + 2 * p + 1, b);
            __m512i s0 = _mm512_setzero_si512(), s1 = _mm512_setzero_si512();
            _Pragma("GCC unroll 4")
            for (int z = 0; z < 4; ++z) {
              s0 = _mm512_dpbusd_epi32(s0, q[z], _mm512_loadu_si512(x0 + 64 * z));
              s1 = _mm512_dpbusd_epi32(s1, q[z], _mm512_loadu_si512(x1 + 64 * z));
            }
            const __m512i sum = _mm512_add_epi32(x86::fold_pair(s0, s1), corr[p]);
            acc[i][p] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(sum), _mm512_mul_ps(dxv[p], dw), acc[i][p]);
          }
        }
      }
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) {
          x86::store_hsum8_halves(acc[i][p], a.y + (c + 2 * p) * a.y_stride + r + i, a.y + (c + 2 * p + 1) * a.y_stride + r + i);
        }
    }
  }
};

}  // namespace

void tq2_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 == 1) walk_tiles<TQ2Avx512, 4, 1>(a, r0, r1, c0, c1);
  else walk_tiles<TQ2Avx512Pairs, 2, 8>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
