// AVX2 Q3_K kernel, ggml's vec_dot structure: unsigned codes low + 4 * high (0..7) times the Q8_K
// quants with _mm256_maddubs_epi16, minus 4 * x per pair (maddubs of a constant 4, once per
// column), weighted by the signed sub-block scales with _mm256_madd_epi16. Codes are expanded per
// column, so batches use 1-column tiles too (wider ones only add register pressure).
#include "families/kquants/q3_k_gemm.hpp"

#ifdef __x86_64__
#include "formats/q3_k/block_q3_k.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

struct Q3KAvx2 {
  template <int R, int C>
  GRAFT_TARGET_AVX2 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m256i m3 = _mm256_set1_epi8(3), m1 = _mm256_set1_epi8(1), four = _mm256_set1_epi8(4);
    for (std::int64_t b = 0; b < nb; ++b) {
      __m256i scl[R][2];
      float dw[R];
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const auto* blk = reinterpret_cast<const block_q3_k*>(w[i] + b * sizeof(block_q3_k));
        const char* ahead = x86::tile_stream_ahead(a.w, a.w_stride, r, R, b, i, sizeof(block_q3_k));
        _mm_prefetch(ahead, _MM_HINT_T1);
        _mm_prefetch(ahead + 64, _MM_HINT_T1);
        std::uint32_t s[4];
        q3k_unpack_scales(blk->scales, s);
        const __m128i s8 = _mm_sub_epi8(_mm_setr_epi32(static_cast<int>(s[0]), static_cast<int>(s[1]),
                                                       static_cast<int>(s[2]), static_cast<int>(s[3])),
                                        _mm_set1_epi8(32));
        const __m256i s16 = _mm256_cvtepi8_epi16(s8);
        scl[i][0] = _mm256_permute2x128_si256(s16, s16, 0x00);
        scl[i][1] = _mm256_permute2x128_si256(s16, s16, 0x11);
        dw[i] = a.fp16[blk->d];
      }
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        const std::int8_t* xq = a.xk->block_qs(c + j, b);
        const float dx = a.xk->scale(c + j, b);
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          const auto* blk = reinterpret_cast<const block_q3_k*>(w[i] + b * sizeof(block_q3_k));
          const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->hmask));
          __m256i sum = _mm256_setzero_si256();
          _Pragma("GCC unroll 2")
          for (int h = 0; h < 2; ++h) {
            const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs + 32 * h));
            _Pragma("GCC unroll 4")
            for (int s = 0; s < 4; ++s) {
              const int v = 4 * h + s;
              const __m256i hi = _mm256_slli_epi16(_mm256_and_si256(_mm256_srli_epi16(hm, v), m1), 2);
              const __m256i u = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(bits, 2 * s), m3), hi);
              const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * v));
              const __m256i p = _mm256_sub_epi16(_mm256_maddubs_epi16(u, x), _mm256_maddubs_epi16(four, x));
              const __m256i sc = _mm256_shuffle_epi8(scl[i][h], x86::scale_pair_shuffle(s));
              sum = _mm256_add_epi32(sum, _mm256_madd_epi16(sc, p));
            }
          }
          acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * dw[i]), _mm256_cvtepi32_ps(sum), acc[i][j]);
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

void q3_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Q3KAvx2, 4, 1>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
