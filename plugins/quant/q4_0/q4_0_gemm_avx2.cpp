// AVX2 Q4_0 kernel: the unsigned nibbles q (0..15) go straight into _mm256_maddubs_epi16 against
// the signed activation quants (|q * x| pairs stay far below int16 saturation), and the block sum
// is sum(q * x) - 8 * sum(x), with sum(x) computed once per activation block. 4 rows are reduced at
// once into exact int32 block sums, then accumulated in f32 exactly as the scalar kernel does.
#include "q4_0_gemm.hpp"

#ifdef __x86_64__
#include "blocks.hpp"
#include "x86_simd.hpp"

namespace graft::quant {

namespace {

struct Avx2 {
  template <int R, int C>
  GRAFT_TARGET_AVX2 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    static_assert(R <= 4);
    const std::int64_t nb = a.k / kQK;
    const BlockQ4_0* w[R];
    for (int i = 0; i < R; ++i) w[i] = reinterpret_cast<const BlockQ4_0*>(a.w + (r + i) * a.w_stride);
    const std::int8_t* xq[C];
    const float* dx[C];
    const std::int32_t* sx[C];
    __m128 acc[C];
    for (int j = 0; j < C; ++j) {
      xq[j] = a.xq->block_qs(c + j, 0);
      dx[j] = a.xq->scales(c + j);
      sx[j] = a.xq->sums(c + j);
      acc[j] = _mm_setzero_ps();
    }
    const __m256i ones = _mm256_set1_epi16(1);
    alignas(16) unsigned short dh[8] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      __m256i q[R];
      for (int i = 0; i < R; ++i) {
        dh[i] = w[i][b].d;
        q[i] = x86::unpack_nibbles(w[i][b].qs);
      }
      const __m128 dw = x86::load_fp16x4(dh);
      for (int j = 0; j < C; ++j) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + b * kQK));
        __m256i p[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
        for (int i = 0; i < R; ++i) p[i] = _mm256_madd_epi16(_mm256_maddubs_epi16(q[i], x), ones);
        const __m128i isum =
            _mm_sub_epi32(x86::reduce4_epi32(p[0], p[1], p[2], p[3]), _mm_set1_epi32(8 * sx[j][b]));
        const __m128 s = _mm_mul_ps(dw, _mm_set1_ps(dx[j][b]));
        acc[j] = _mm_add_ps(acc[j], _mm_mul_ps(s, _mm_cvtepi32_ps(isum)));
      }
    }
    for (int j = 0; j < C; ++j) {
      alignas(16) float out[4];
      _mm_store_ps(out, acc[j]);
      for (int i = 0; i < R; ++i) a.y[(c + j) * a.y_stride + r + i] = out[i];
    }
  }
};

}  // namespace

void q4_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Avx2, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
