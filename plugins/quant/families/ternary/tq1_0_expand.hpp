// TQ1_0 block -> its 256 codes (0..2) as 8 x 32 bytes in element order, with 256-bit integer ops.
// Include once per translation unit after defining GRAFT_TQ1_TARGET as that level's target
// attribute. Trit n of a byte is ((uint8)(byte * 3^n) * 3) >> 8: the byte multiples come from
// shifts and adds (x86 has no byte multiply), and (q * 3) >> 8 from ggml's halving-add trick
// (avg(q', avg(q', 0)) >> 6 with q' = q -sat 1), exact for every byte (checked over all 256 in
// tests via random blocks).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "formats/tq1_0/block_tq1_0.hpp"
#include "simd/x86_simd.hpp"

#ifndef GRAFT_TQ1_TARGET
#error "define GRAFT_TQ1_TARGET before including tq1_0_expand.hpp"
#endif

namespace graft::quant {
namespace {

struct TQ1Expand {
  static constexpr std::int64_t kBlockBytes = sizeof(block_tq1_0), kScaleOffset = offsetof(block_tq1_0, d);
  // a * 9 mod 256 per byte: (a << 3) within each byte, plus a.
  GRAFT_TQ1_TARGET static __m256i times9(__m256i a) {
    return _mm256_add_epi8(_mm256_and_si256(_mm256_slli_epi16(a, 3), _mm256_set1_epi8(static_cast<char>(0xF8))), a);
  }
  GRAFT_TQ1_TARGET static __m256i top_trit(__m256i q) {
    const __m256i q1 = _mm256_subs_epu8(q, _mm256_set1_epi8(1));
    const __m256i r = _mm256_avg_epu8(q1, _mm256_avg_epu8(q1, _mm256_setzero_si256()));
    return _mm256_and_si256(_mm256_srli_epi16(r, 6), _mm256_set1_epi8(3));
  }
  // The five trits of every byte of v.
  GRAFT_TQ1_TARGET static void trits(__m256i v, __m256i t[5]) {
    const __m256i v3 = _mm256_add_epi8(v, _mm256_add_epi8(v, v));
    const __m256i v9 = times9(v);
    t[0] = top_trit(v);
    t[1] = top_trit(v3);
    t[2] = top_trit(v9);
    t[3] = top_trit(times9(v3));
    t[4] = top_trit(times9(v9));
  }
  GRAFT_TQ1_TARGET static void codes(const std::uint8_t* blk, __m256i out[8]) {
    trits(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk)), out);  // elements 0..159
    // [qs 32..47 | qh 0..3 repeated four times]
    std::uint32_t qh;
    std::memcpy(&qh, blk + 48, 4);
    const __m256i tail = _mm256_inserti128_si256(
        _mm256_castsi128_si256(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk + 32))),
        _mm_set1_epi32(static_cast<int>(qh)), 1);
    __m256i u[5];
    trits(tail, u);
    out[5] = _mm256_permute2x128_si256(u[0], u[1], 0x20);  // elements 160..191
    out[6] = _mm256_permute2x128_si256(u[2], u[3], 0x20);  // 192..223
    // Elements 240 + 4n + j are trit n of qh[j]: dword n of u[n]'s high half.
    __m256i q = _mm256_blend_epi32(u[0], u[1], 0x20);
    q = _mm256_blend_epi32(q, u[2], 0x40);
    q = _mm256_blend_epi32(q, u[3], 0x80);
    out[7] = _mm256_blend_epi32(u[4], q, 0xF0);  // 224..255
  }
};

}  // namespace
}  // namespace graft::quant
