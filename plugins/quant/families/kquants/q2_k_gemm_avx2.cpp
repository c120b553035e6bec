// AVX2 Q2_K kernel, ggml's vec_dot structure: codes (0..3) times Q8_K quants with
// _mm256_maddubs_epi16, weighted by the sub-block scales with _mm256_madd_epi16; the mins meet the
// activation's 16-element sums in one more madd. A row's codes and scale vectors are extracted once
// per step and serve every column of the tile: decode runs 4 rows x 1 column (the f32 work of 4
// rows side by side), batches 2 rows x 4 columns (the extraction, 3 of a step's 6 operations,
// shared by 4 columns; each activation load by 2 rows). quant_bench: 1 x 8 columns and 1 x 4 were
// 5-20% slower in batches.
#include "families/kquants/q2_k_gemm.hpp"

#ifdef __x86_64__
#include <cstring>

#include "formats/q2_k/block_q2_k.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

struct Q2KAvx2 {
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
    const __m256i m3 = _mm256_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    for (std::int64_t b = 0; b < nb; ++b) {
      const std::int8_t* xq[C];
      __m256 dx[C];
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        xq[j] = a.xk->block_qs(c + j, b);
        dx[j] = _mm256_set1_ps(a.xk->scale(c + j, b));
      }
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = w[i] + b * sizeof(block_q2_k);
        const char* ahead = x86::tile_stream_ahead(a.w, a.w_stride, r, R, b, i, sizeof(block_q2_k));
        _mm_prefetch(ahead, _MM_HINT_T1);
        _mm_prefetch(ahead + 64, _MM_HINT_T1);
        const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
        const __m256i s16 = _mm256_cvtepu8_epi16(_mm_and_si128(sm, m4));
        const __m256i scl[2] = {_mm256_permute2x128_si256(s16, s16, 0x00), _mm256_permute2x128_si256(s16, s16, 0x11)};
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4));
        std::uint16_t h[2];
        std::memcpy(h, blk + 80, 4);
        const float dw = a.fp16[h[0]], dmw = a.fp16[h[1]];
        __m256i sum[C];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) sum[j] = _mm256_setzero_si256();
        _Pragma("GCC unroll 2")
        for (int hh = 0; hh < 2; ++hh) {
          const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * hh));
          _Pragma("GCC unroll 4")
          for (int s = 0; s < 4; ++s) {
            const __m256i q = _mm256_and_si256(_mm256_srli_epi16(bits, 2 * s), m3);
            const __m256i sc = _mm256_shuffle_epi8(scl[hh], x86::scale_pair_shuffle(s));
            _Pragma("GCC unroll 8")
            for (int j = 0; j < C; ++j) {
              const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + 128 * hh + 32 * s));
              sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(sc, _mm256_maddubs_epi16(q, x)));
              // Keeps the sum a running one: GCC would otherwise keep all 32 products of a batch
              // tile for an adder tree at the end, spilling them (slower).
              asm("" : "+x"(sum[j]));
            }
          }
        }
        // d_x * d_w and -(d_x * dmin_w) as vector products (the same roundings as the scalar ones)
        // of broadcasts made once per column and row: 2.5% off a batch tile in L1.
        const __m256 ndmwv = _mm256_set1_ps(-dmw), dwv = _mm256_set1_ps(dw);
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
          const __m256i msum = _mm256_madd_epi16(mins, bs);
          acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(dx[j], ndmwv), _mm256_cvtepi32_ps(msum), acc[i][j]);
          acc[i][j] = _mm256_fmadd_ps(_mm256_mul_ps(dx[j], dwv), _mm256_cvtepi32_ps(sum[j]), acc[i][j]);
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

void q2_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 == 1) walk_tiles<Q2KAvx2, 4, 1>(a, r0, r1, c0, c1);
  else walk_tiles<Q2KAvx2, 2, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
