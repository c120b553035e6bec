// The f32 end of a Q4_K / Q5_K output (Bits = 4 or 5 code bits) shared by the file-layout kernels
// (k4_gemm_x86.hpp) and the packed ones (k4_packed_avx512.cpp): how the mins' accumulator is read
// out, and at AVX-512 the 4-row tile's pieces (two rows per f32 register, the mins of all four in
// one). Every piece does exactly the operations of the definition (q4_k_gemm.hpp, q5_k_gemm.hpp).
#pragma once

#include <cstdint>

#include "simd/x86_simd.hpp"

namespace graft::quant {
namespace {

// The mins' accumulator as the definition reads it out: Q4_K (accm[0] + accm[2]) + (accm[1] +
// accm[3]), Q5_K accm[0] (its one total sits in every lane).
template <int Bits>
GRAFT_TARGET_AVX2 inline float min_total(__m128 m) {
  if constexpr (Bits == 5) return _mm_cvtss_f32(m);
  m = _mm_add_ps(m, _mm_movehl_ps(m, m));
  m = _mm_add_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

// The mins' integer terms of 4 rows (row i's 8 mins as words in 128-bit lane i) against one
// column's Q8_K block sums: Q4_K M[0..3] per row, Q5_K their total in all 4 lanes of the row.
template <int Bits>
GRAFT_TARGET_AVX512 inline __m512i four_row_min_terms(__m512i mins, const std::int16_t* bsums) {
  const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums));
  const __m128i sums = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
  __m512i mm = _mm512_madd_epi16(mins, _mm512_broadcast_i32x4(sums));
  if constexpr (Bits == 5) {  // one total per row, in every lane of its 128 bits
    mm = _mm512_add_epi32(mm, _mm512_shuffle_epi32(mm, _MM_PERM_BADC));
    mm = _mm512_add_epi32(mm, _mm512_shuffle_epi32(mm, _MM_PERM_CDAB));
  }
  return mm;
}

// The outputs of the first `rows` of 4 rows into y: acc[h] holds rows 2h (low half) and 2h + 1,
// accm row i in 128-bit lane i.
template <int Bits>
GRAFT_TARGET_AVX512 inline void store_four_rows(const __m512 acc[2], __m512 accm, float* y, int rows) {
  const __m256 part[4] = {_mm512_castps512_ps256(acc[0]), x86::high_half(acc[0]), _mm512_castps512_ps256(acc[1]),
                          x86::high_half(acc[1])};
  const __m128 mparts[4] = {_mm512_castps512_ps128(accm), _mm512_extractf32x4_ps(accm, 1),
                            _mm512_extractf32x4_ps(accm, 2), _mm512_extractf32x4_ps(accm, 3)};
  for (int i = 0; i < rows; ++i) y[i] = x86::hsum8(part[i]) + min_total<Bits>(mparts[i]);
}

}  // namespace
}  // namespace graft::quant
