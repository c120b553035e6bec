// AVX2 form of quantize_q8k_row, bit-identical to the scalar one for every input:
// - the block's largest |x| by max_ps with the running maximum as second operand (a NaN input
//   returns it, as the scalar's `>` skips NaN), then the FIRST element of that magnitude (the
//   scalar's strict `>` keeps the first of ties), found by comparing and scanning masks;
// - the same product iscale * x and the same nearest_int bit trick, so even the garbage of an
//   infinite iscale (a denormal max) matches; min(127) on int32, then truncation to int8 (and 0xFF
//   + unsigned packs), as the scalar's static_cast does;
// - bsums from the stored bytes: sad_epu8 of q ^ 0x80 sums 8 biased bytes exactly.
#include "activations/q8k_activations.hpp"

#ifdef __x86_64__
#include <cstring>

#include "simd/x86_simd.hpp"

namespace graft::quant {

GRAFT_TARGET_AVX2 void quantize_q8k_row_avx2(const float* x, std::int64_t k, std::int8_t* qs, float* d,
                                             std::int16_t* bsums) noexcept {
  const __m256 sign = _mm256_set1_ps(-0.0f);
  const __m256i order = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
  const __m256i low_byte = _mm256_set1_epi32(0xFF);
  for (std::int64_t b = 0; b < k / kQK_K; ++b, x += kQK_K, qs += kQK_K, bsums += 16) {
    __m256 m[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps()};
    for (int i = 0; i < 32; ++i) m[i % 4] = _mm256_max_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)), m[i % 4]);
    const __m256 m8 = _mm256_max_ps(_mm256_max_ps(m[0], m[1]), _mm256_max_ps(m[2], m[3]));
    __m128 m4 = _mm_max_ps(_mm256_extractf128_ps(m8, 1), _mm256_castps256_ps128(m8));
    m4 = _mm_max_ps(m4, _mm_movehl_ps(m4, m4));
    m4 = _mm_max_ss(m4, _mm_movehdup_ps(m4));
    const float amax = _mm_cvtss_f32(m4);
    if (amax == 0.0f) {
      d[b] = 0.0f;
      std::memset(qs, 0, kQK_K);
      std::memset(bsums, 0, 16 * sizeof(std::int16_t));
      continue;
    }
    const __m256 amaxv = _mm256_set1_ps(amax);
    int first = 0;
    for (int i = 0; i < 32; ++i) {
      const int mask = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_andnot_ps(sign, _mm256_loadu_ps(x + 8 * i)), amaxv, _CMP_EQ_OQ));
      if (mask != 0) {
        first = 8 * i + __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m256 is = _mm256_set1_ps(iscale);
    const __m256 magic = _mm256_set1_ps(12582912.0f);
    const __m256i mant = _mm256_set1_epi32(0x007FFFFF), bias = _mm256_set1_epi32(0x00400000), top = _mm256_set1_epi32(127);
    __m256i sad[8];
    for (int c = 0; c < 8; ++c) {
      __m256i q[4];
      for (int i = 0; i < 4; ++i) {
        const __m256i bits = _mm256_castps_si256(_mm256_add_ps(_mm256_mul_ps(is, _mm256_loadu_ps(x + 32 * c + 8 * i)), magic));
        const __m256i v = _mm256_min_epi32(_mm256_sub_epi32(_mm256_and_si256(bits, mant), bias), top);
        q[i] = _mm256_and_si256(v, low_byte);
      }
      const __m256i packed = _mm256_permutevar8x32_epi32(
          _mm256_packus_epi16(_mm256_packus_epi32(q[0], q[1]), _mm256_packus_epi32(q[2], q[3])), order);
      _mm256_storeu_si256(reinterpret_cast<__m256i*>(qs + 32 * c), packed);
      sad[c] = _mm256_sad_epu8(_mm256_xor_si256(packed, _mm256_set1_epi8(static_cast<char>(0x80))), _mm256_setzero_si256());
    }
    // sad[c] holds per 128-bit lane (group 2c, then 2c + 1) two biased sums of 8 in its even dwords.
    __m256i u[4];
    for (int i = 0; i < 4; ++i) u[i] = _mm256_hadd_epi32(sad[2 * i], sad[2 * i + 1]);
    // v: low lane groups 0, 2, 4, 6, high lane 1, 3, 5, 7; w: the same for 8..15.
    const __m256i bias16 = _mm256_set1_epi32(16 * 128);
    const __m256i v = _mm256_sub_epi32(_mm256_hadd_epi32(u[0], u[1]), bias16);
    const __m256i w = _mm256_sub_epi32(_mm256_hadd_epi32(u[2], u[3]), bias16);
    const __m256i s16 = _mm256_packs_epi32(v, w);  // low lane: even groups, high lane: odd groups
    const __m128i even = _mm256_castsi256_si128(s16), odd = _mm256_extracti128_si256(s16, 1);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bsums), _mm_unpacklo_epi16(even, odd));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(bsums + 8), _mm_unpackhi_epi16(even, odd));
    d[b] = 1.0f / iscale;
  }
}

}  // namespace graft::quant
#endif
