// What the AVX2 and AVX-512 attention kernels share: prefetching a row, and ggml blocks decoded
// in registers (each element its integer, the scale by F16C, which converts every f16 exactly as
// f16_to_f32 does). Include in attention_avx2.cpp / attention_avx512.cpp after the target pragma:
// the functions have internal linkage, so each file's copy is compiled for its own instructions.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "attention_kernels.hpp"

namespace graft::kv {
namespace {

// A KV head's rows follow each other in the store's head-major cache but are n_kv_heads * head_dim
// elements apart (often a page) in a token-major one, which the hardware prefetcher does not
// follow; and the rows a query visits need not be consecutive slots. So the kernels request rows
// ahead themselves.
template <class T>
inline __attribute__((always_inline)) void prefetch_row(const T* row, std::uint32_t d) {
  const char* p = reinterpret_cast<const char*>(row);
  const auto bytes = static_cast<std::uint32_t>(row_bytes<T>(d));
  for (std::uint32_t o = 0; o < bytes; o += 64) _mm_prefetch(p + o, _MM_HINT_T0);
  _mm_prefetch(p + bytes - 1, _MM_HINT_T0);  // a row that straddles one more line
}

// Elements e..e+7 (e % 8 == 0) of a row of ggml blocks as int32: q8_0's int8, q4_0's nibble less 8
// (element j in qs[j] & 15, j + 16 in qs[j] >> 4). Times block_scale, rounded once, they are the
// values dequantize_row gives.
inline __attribute__((always_inline)) __m256i ints8(const quant::block_q8_0* row, std::uint32_t e) {
  return _mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row[e / 32].qs + e % 32)));
}
inline __attribute__((always_inline)) __m256i ints8(const quant::block_q4_0* row, std::uint32_t e) {
  const std::uint32_t o = e % 32;
  const __m256i q = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row[e / 32].qs + o % 16)));
  const __m256i nib = o < 16 ? _mm256_and_si256(q, _mm256_set1_epi32(15)) : _mm256_srli_epi32(q, 4);
  return _mm256_sub_epi32(nib, _mm256_set1_epi32(8));
}
template <class B>
inline __attribute__((always_inline)) float block_scale(const B* row, std::uint32_t e) {
  return _cvtsh_ss(row[e / 32].d);
}

// Elements e..e+7 (e % 8 == 0) of a row of blocks before the scale: the integers above as floats
// (exact), or tq3's levels, looked up by a permute of the 8-entry table with each lane's index
// (2 code bits from qs, the sign bit from qh).
inline __attribute__((always_inline)) __m256 levels8(const quant::block_q8_0* row, std::uint32_t e) {
  return _mm256_cvtepi32_ps(ints8(row, e));
}
inline __attribute__((always_inline)) __m256 levels8(const quant::block_q4_0* row, std::uint32_t e) {
  return _mm256_cvtepi32_ps(ints8(row, e));
}
// Elements e..e+7 of a tq3 row in one word: bits 0-15 the 8 codes (qs[o/4], qs[o/4 + 1]), bits
// 16-23 the 8 signs (qh[o/8]); lane l's index is bits 2l-2l+1, and bit 16+l shifted to bit 2.
inline __attribute__((always_inline)) int tq3_bits(const block_tq3* row, std::uint32_t e) {
  const block_tq3& b = row[e / 32];
  const std::uint32_t o = e % 32;
  return static_cast<int>(b.qs[o / 4] | static_cast<std::uint32_t>(b.qs[o / 4 + 1]) << 8 |
                          static_cast<std::uint32_t>(b.qh[o / 8]) << 16);
}
inline __attribute__((always_inline)) __m256 levels8(const block_tq3* row, std::uint32_t e) {
  const __m256i w = _mm256_set1_epi32(tq3_bits(row, e));
  const __m256i code = _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14)),
                                        _mm256_set1_epi32(3));
  const __m256i sign = _mm256_and_si256(_mm256_srlv_epi32(w, _mm256_setr_epi32(14, 15, 16, 17, 18, 19, 20, 21)),
                                        _mm256_set1_epi32(4));
  return _mm256_permutevar8x32_ps(_mm256_loadu_ps(kTq3Levels), _mm256_or_si256(code, sign));
}

}  // namespace
}  // namespace graft::kv
