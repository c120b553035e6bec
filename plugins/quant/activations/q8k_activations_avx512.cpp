// AVX-512 form of quantize_q8k_row, the AVX2 form's operations on 16 lanes (see
// q8k_activations_avx2.cpp for why each step gives the scalar's bits): a block is 16 registers,
// one 16-element bsum group each; vpmovdb truncates int32 to int8 like the scalar's cast.
#include "activations/q8k_activations.hpp"

#ifdef __x86_64__
#include <cstring>

#include "simd/x86_simd.hpp"

namespace graft::quant {

GRAFT_TARGET_AVX512 void quantize_q8k_row_avx512(const float* x, std::int64_t k, std::int8_t* qs, float* d,
                                                 std::int16_t* bsums) noexcept {
  for (std::int64_t b = 0; b < k / kQK_K; ++b, x += kQK_K, qs += kQK_K, bsums += 16) {
    __m512 ax[16];
    __m512 m[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps()};
    for (int i = 0; i < 16; ++i) {
      ax[i] = _mm512_abs_ps(_mm512_loadu_ps(x + 16 * i));
      m[i % 4] = _mm512_max_ps(ax[i], m[i % 4]);  // NaN in the first operand returns the second
    }
    const float amax = _mm512_reduce_max_ps(_mm512_max_ps(_mm512_max_ps(m[0], m[1]), _mm512_max_ps(m[2], m[3])));
    if (amax == 0.0f) {
      d[b] = 0.0f;
      std::memset(qs, 0, kQK_K);
      std::memset(bsums, 0, 16 * sizeof(std::int16_t));
      continue;
    }
    const __m512 amaxv = _mm512_set1_ps(amax);
    int first = 0;
    for (int i = 0; i < 16; ++i) {
      const __mmask16 mask = _mm512_cmp_ps_mask(ax[i], amaxv, _CMP_EQ_OQ);
      if (mask != 0) {
        first = 16 * i + __builtin_ctz(static_cast<unsigned>(mask));
        break;
      }
    }
    const float iscale = -127.0f / x[first];
    const __m512 is = _mm512_set1_ps(iscale);
    const __m512 magic = _mm512_set1_ps(12582912.0f);
    const __m512i mant = _mm512_set1_epi32(0x007FFFFF), bias = _mm512_set1_epi32(0x00400000), top = _mm512_set1_epi32(127);
    for (int i = 0; i < 16; ++i) {
      const __m512i bits = _mm512_castps_si512(_mm512_add_ps(_mm512_mul_ps(is, _mm512_loadu_ps(x + 16 * i)), magic));
      const __m512i v = _mm512_min_epi32(_mm512_sub_epi32(_mm512_and_si512(bits, mant), bias), top);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(qs + 16 * i), _mm512_cvtepi32_epi8(v));
    }
    // Biased sums of 8 bytes: register k holds groups 4k .. 4k + 3 as (first half, second half).
    __m512i s[4];
    for (int i = 0; i < 4; ++i)
      s[i] = _mm512_sad_epu8(_mm512_xor_si512(_mm512_loadu_si512(qs + 64 * i), _mm512_set1_epi8(static_cast<char>(0x80))),
                             _mm512_setzero_si512());
    const __m512i even = _mm512_setr_epi64(0, 2, 4, 6, 8, 10, 12, 14), odd = _mm512_setr_epi64(1, 3, 5, 7, 9, 11, 13, 15);
    const __m128i bias16 = _mm_set1_epi16(16 * 128);
    for (int h = 0; h < 2; ++h) {
      const __m512i g = _mm512_add_epi64(_mm512_permutex2var_epi64(s[2 * h], even, s[2 * h + 1]),
                                         _mm512_permutex2var_epi64(s[2 * h], odd, s[2 * h + 1]));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(bsums + 8 * h), _mm_sub_epi16(_mm512_cvtepi64_epi16(g), bias16));
    }
    d[b] = 1.0f / iscale;
  }
}

GRAFT_TARGET_AVX512 void q8k_lane_sums_avx512(const std::int8_t* qs, std::int32_t bias, std::int32_t* out) noexcept {
  __m512i s = _mm512_setzero_si512();
  for (int z = 0; z < 4; ++z) s = _mm512_dpbusd_epi32(s, _mm512_set1_epi8(1), _mm512_loadu_si512(qs + 64 * z));
  // Dword L sums elements 64z + 4L..: lane L % 8 of chunk 2z + L / 8, so the halves add to lane l.
  const __m256i l8 = _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), _mm256_mullo_epi32(l8, _mm256_set1_epi32(bias)));
}

}  // namespace graft::quant
#endif
