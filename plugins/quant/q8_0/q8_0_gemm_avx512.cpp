// AVX-512 VNNI Q8_0 kernel (256-bit vectors, as ggml uses VNNI): w + 128 (w xor 0x80) is an
// unsigned byte, so one _mm256_dpbusd_epi32 gives sum((w + 128) * x) and the block sum is that
// minus 128 * sum(x), with sum(x) computed once per activation block. Integer results equal the
// AVX2 and scalar kernels', and the f32 accumulation is the same sequence.
#include "q8_0_gemm.hpp"

#ifdef __x86_64__
#include "blocks.hpp"
#include "x86_simd.hpp"

namespace graft::quant {

namespace {

struct Avx512 {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    static_assert(R <= 4);
    const std::int64_t nb = a.k / kQK;
    const BlockQ8_0* w[R];
    for (int i = 0; i < R; ++i) w[i] = reinterpret_cast<const BlockQ8_0*>(a.w + (r + i) * a.w_stride);
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
    const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
    alignas(16) unsigned short dh[8] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      __m256i u[R];
      for (int i = 0; i < R; ++i) {
        dh[i] = w[i][b].d;
        u[i] = _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[i][b].qs)), bias);
      }
      const __m128 dw = x86::load_fp16x4(dh);
      for (int j = 0; j < C; ++j) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + b * kQK));
        __m256i p[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                        _mm256_setzero_si256()};
        for (int i = 0; i < R; ++i) p[i] = _mm256_dpbusd_epi32(_mm256_setzero_si256(), u[i], x);
        const __m128i isum =
            _mm_sub_epi32(x86::reduce4_epi32(p[0], p[1], p[2], p[3]), _mm_set1_epi32(128 * sx[j][b]));
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

void q8_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Avx512, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
