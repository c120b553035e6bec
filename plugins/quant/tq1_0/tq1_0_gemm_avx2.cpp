// AVX2 TQ1_0 kernel: each row's block expanded once to codes (tq1_0_expand.hpp), then per column
// ggml's sums: _mm256_maddubs_epi16 pairs accumulated in int16, widened to 8 int32 lanes by
// _mm256_madd_epi16, starting from -(bsum[2l] + bsum[2l+1]).
#include "tq1_0_gemm.hpp"

#ifdef __x86_64__
#define GRAFT_TQ1_TARGET GRAFT_TARGET_AVX2
#include "tq1_0_expand.hpp"

namespace graft::quant {

namespace {

struct TQ1Avx2 {
  template <int R, int C>
  GRAFT_TARGET_AVX2 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / 256;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m256i ones = _mm256_set1_epi16(1), neg = _mm256_set1_epi16(-1);
    for (std::int64_t b = 0; b < nb; ++b) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = w[i] + b * 54;
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride + 53), _MM_HINT_T0);
        __m256i q[8];
        TQ1Expand::codes(blk, q);
        const float dw = a.fp16[blk[52] | (blk[53] << 8)];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const std::int8_t* xq = a.xk->block_qs(c + j, b);
          const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
          __m256i p16 = _mm256_setzero_si256();
          _Pragma("GCC unroll 8")
          for (int v = 0; v < 8; ++v)
            p16 = _mm256_add_epi16(p16, _mm256_maddubs_epi16(q[v], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * v))));
          const __m256i s = _mm256_add_epi32(_mm256_madd_epi16(p16, ones), _mm256_madd_epi16(bs, neg));
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

}  // namespace

void tq1_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<TQ1Avx2, 4, 2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
