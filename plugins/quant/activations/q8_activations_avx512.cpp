// AVX-512 form of quantize_activation_row: the scalar's operations (see q8_activations_avx2.cpp
// for why each gives the same bits), with the per-block scalar steps done for 16 blocks at once:
// their 16 maxima folded into one register, then one division, one fp16 round trip (vcvtps2ph
// rounds to nearest even like f32_to_f16_ggml) and one division for the 16 inverse scales. Where
// the scalar's float-to-int cast is undefined (127 / amax overflows: amax below ~3.7e-37) this
// row equals the AVX2 row; blocks holding a NaN are not pinned to any form's bits.
#include "activations/q8_activations.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

// Lane i = the largest of a[i]'s 16 lanes: three rounds of pairing 128-bit chunks, then floats
// within chunks, as in the attention's fold16, and a final permutation into block order.
GRAFT_TARGET_AVX512 inline __m512 max_fold16(const __m512* a) {
  __m512 b[8], c[4], d[2];
  for (int k = 0; k < 8; ++k)
    b[k] = _mm512_max_ps(_mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0x88), _mm512_shuffle_f32x4(a[2 * k], a[2 * k + 1], 0xDD));
  for (int j = 0; j < 4; ++j)
    c[j] = _mm512_max_ps(_mm512_shuffle_f32x4(b[2 * j], b[2 * j + 1], 0x88), _mm512_shuffle_f32x4(b[2 * j], b[2 * j + 1], 0xDD));
  for (int k = 0; k < 2; ++k)
    d[k] = _mm512_max_ps(_mm512_shuffle_ps(c[2 * k], c[2 * k + 1], 0x88), _mm512_shuffle_ps(c[2 * k], c[2 * k + 1], 0xDD));
  const __m512 e = _mm512_max_ps(_mm512_shuffle_ps(d[0], d[1], 0x88), _mm512_shuffle_ps(d[0], d[1], 0xDD));
  return _mm512_permutexvar_ps(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15), e);
}

}  // namespace

GRAFT_TARGET_AVX512 void quantize_activation_row_avx512(const float* x, std::int64_t k, std::int32_t offset,
                                                        std::int8_t* qs, float* d, std::int32_t* lane_offsets) noexcept {
  constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const std::int64_t nb = k / 32;
  const __m512i neg_offset = _mm512_set1_epi32(-offset), ones = _mm512_set1_epi8(1);
  std::int64_t b = 0;
  for (; b + 16 <= nb; b += 16) {
    const float* xb = x + b * 32;
    __m512 m[16];
    for (int i = 0; i < 16; ++i)
      m[i] = _mm512_max_ps(_mm512_abs_ps(_mm512_loadu_ps(xb + 32 * i)), _mm512_abs_ps(_mm512_loadu_ps(xb + 32 * i + 16)));
    const __m512 amax = max_fold16(m);
    _mm512_storeu_ps(d + b, _mm512_cvtph_ps(_mm512_cvtps_ph(_mm512_div_ps(amax, _mm512_set1_ps(127.0f)), kRound)));
    // amax != 0 ? 127 / amax : 0 (NaN != 0 holds, as in the scalar form)
    const __mmask16 nonzero = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_NEQ_UQ);
    alignas(64) float ids[16];
    _mm512_store_ps(ids, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(127.0f), amax));
    for (int i = 0; i < 16; i += 2) {
      __m128i bytes[4];
      for (int h = 0; h < 2; ++h) {
        const __m512 id = _mm512_set1_ps(ids[i + h]);
        for (int half = 0; half < 2; ++half) {
          const __m512 v = _mm512_mul_ps(_mm512_loadu_ps(xb + 32 * (i + h) + 16 * half), id);
          bytes[2 * h + half] = _mm512_cvtsepi32_epi8(_mm512_cvt_roundps_epi32(v, kRound));
        }
      }
      const __m512i q = _mm512_inserti32x4(
          _mm512_inserti32x4(_mm512_inserti32x4(_mm512_castsi128_si512(bytes[0]), bytes[1], 1), bytes[2], 2), bytes[3], 3);
      _mm512_storeu_si512(qs + (b + i) * 32, q);
      // Each dword: the sum of 4 quants (ones x signed quants), times -offset.
      _mm512_storeu_si512(lane_offsets + (b + i) * 8,
                          _mm512_mullo_epi32(_mm512_dpbusd_epi32(_mm512_setzero_si512(), ones, q), neg_offset));
    }
  }
  if (b < nb)
    quantize_activation_row_avx2(x + b * 32, (nb - b) * 32, offset, qs + b * 32, d + b, lane_offsets + b * 8);
}

}  // namespace graft::quant
#endif
