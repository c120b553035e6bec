// AVX2 form of quantize_activation_row (also used at the AVX-512 level): ggml's x86
// quantize_row_q8_0 operation for operation, so its quants and scales equal the scalar version's
// bit for bit (max of |x| is exact in any order; the divisions, the product and the
// round-half-even are the same IEEE operations).
#include "activations/q8_activations.hpp"

#ifdef __x86_64__
#include "half.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

GRAFT_TARGET_AVX2 void quantize_activation_row_avx2(const float* x, std::int64_t k, std::int32_t offset,
                                                    std::int8_t* qs, float* d, std::int32_t* lane_offsets) noexcept {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i neg_offset = _mm256_set1_epi32(-offset);
  for (std::int64_t b = 0; b < k / 32; ++b, x += 32, qs += 32, lane_offsets += 8) {
    __m256 v[4];
    for (int i = 0; i < 4; ++i) v[i] = _mm256_loadu_ps(x + 8 * i);
    __m256 m = _mm256_max_ps(_mm256_max_ps(_mm256_andnot_ps(sign, v[0]), _mm256_andnot_ps(sign, v[1])),
                             _mm256_max_ps(_mm256_andnot_ps(sign, v[2]), _mm256_andnot_ps(sign, v[3])));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m, 1), _mm256_castps256_ps128(m));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    d[b] = f16_to_f32(f32_to_f16_ggml(amax / 127.0f));
    const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
    __m256i q[4];
    for (int i = 0; i < 4; ++i)
      q[i] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[i], id), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
    // int32 -> int8 (values are within [-127, 127]); the packs work per 128-bit half, the
    // permutation restores element order.
    const __m256i packed = _mm256_permutevar8x32_epi32(
        _mm256_packs_epi16(_mm256_packs_epi32(q[0], q[1]), _mm256_packs_epi32(q[2], q[3])), order);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs), packed);
    const __m256i sums = _mm256_madd_epi16(_mm256_maddubs_epi16(_mm256_set1_epi8(1), packed), _mm256_set1_epi16(1));
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(lane_offsets), _mm256_mullo_epi32(sums, neg_offset));
  }
}

}  // namespace graft::quant
#endif
