// AVX-512 VNNI Q2_K kernel: the integer work on 512-bit vectors, 64 elements (four sub-blocks) per
// step: codes by a broadcast load and per-half variable shift, _mm512_maddubs_epi16 against the
// Q8_K quants, then vpdpwssd multiplies by the sub-block scales and accumulates. The two 256-bit
// halves' lane sums are added (exact integers) into ggml's 8 lanes before the f32 work.
// Batches (Q2KAvx512Batch, q2_k_batch_avx512.hpp) instead expand each row's blocks once per call into code * scale bytes
// (0..45) and use vpdpbusd straight on them, two activation columns per 512-bit register for the
// f32 work: the same lane values and the same f32 operations.
#include "families/kquants/q2_k_gemm.hpp"

#ifdef __x86_64__
#include <cstring>

#include "families/kquants/pair_batch.hpp"
#include "families/kquants/q2_k_batch_avx512.hpp"
#include "formats/q2_k/block_q2_k.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

struct Q2KAvx512 {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m512i m3 = _mm512_set1_epi8(3);
    const __m128i m4 = _mm_set1_epi8(0x0F);
    const __m512i shift_lo = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    const __m512i shift_hi = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i sub_of_lane = _mm512_setr_epi64(0, 0, 0x0001000100010001ll, 0x0001000100010001ll, 0x0002000200020002ll,
                                                  0x0002000200020002ll, 0x0003000300030003ll, 0x0003000300030003ll);
    for (std::int64_t b = 0; b < nb; ++b) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = w[i] + b * sizeof(block_q2_k);
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride + 83), _MM_HINT_T0);
        const __m128i sm = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blk));
        __m512i q[4], scl[4];
        const __m512i s16 = _mm512_castsi256_si512(_mm256_cvtepu8_epi16(_mm_and_si128(sm, m4)));
        const __m256i mins = _mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4));
        _Pragma("GCC unroll 4")
        for (int z = 0; z < 4; ++z) {
          // int16 lane L of step z takes sub-block 4z + L / 8.
          const __m512i idx = _mm512_add_epi16(_mm512_set1_epi16(static_cast<short>(4 * z)), sub_of_lane);
          scl[z] = _mm512_permutexvar_epi16(idx, s16);
        }
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; ++h) {
          const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * h)));
          q[2 * h] = _mm512_and_si512(_mm512_srlv_epi64(bits, shift_lo), m3);
          q[2 * h + 1] = _mm512_and_si512(_mm512_srlv_epi64(bits, shift_hi), m3);
        }
        std::uint16_t hd[2];
        std::memcpy(hd, blk + 80, 4);
        const float dw = a.fp16[hd[0]];
        const float dmw = a.fp16[hd[1]];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const std::int8_t* xq = a.xk->block_qs(c + j, b);
          const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
          const float dx = a.xk->scale(c + j, b);
          const __m256i msum = _mm256_madd_epi16(mins, bs);
          __m512i sum = _mm512_setzero_si512();
          _Pragma("GCC unroll 4")
          for (int z = 0; z < 4; ++z)
            sum = _mm512_dpwssd_epi32(sum, scl[z], _mm512_maddubs_epi16(q[z], _mm512_loadu_si512(xq + 64 * z)));
          const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
          acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(-dx * dmw), _mm256_cvtepi32_ps(msum), acc[i][j]);
          acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * dw), _mm256_cvtepi32_ps(s8), acc[i][j]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

// The batch tile on expansions of the file's blocks.
struct Q2KFileBatch : Q2KAvx512Batch {
  static void expand(const GemmArgs& a, std::int64_t row, std::int64_t b, std::uint8_t* out) {
    const std::uint8_t* blk = a.w + row * a.w_stride + b * sizeof(block_q2_k);
    std::uint16_t hd[2];
    std::memcpy(hd, blk + 80, 4);
    expand_block(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)), file_step_codes(blk), a.fp16[hd[0]],
                 a.fp16[hd[1]], out);
  }
};

}  // namespace

void q2_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 == 1) walk_tiles<Q2KAvx512, 4, 1>(a, r0, r1, c0, c1);
  else pair_batch<Q2KFileBatch, Q2KAvx512>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
