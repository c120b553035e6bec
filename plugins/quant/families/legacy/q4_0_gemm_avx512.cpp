// AVX-512 VNNI Q4_0 kernel: one dpbusd multiplies the unsigned codes q (0..15) by the signed
// activation quants and accumulates the lane sums onto the activation's precomputed -8 * sum(x),
// leaving exactly sum((q - 8) * x). 256-bit vectors for single columns, 512-bit column pairs for
// batches (qgemm_avx512.hpp).
#include "families/legacy/q4_0_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_QGEMM_TARGET GRAFT_TARGET_AVX512
#include "families/legacy/qgemm_avx512.hpp"

namespace graft::quant {

namespace {

struct Q4Avx512 {
  static constexpr std::int64_t kBlockBytes = 18;
  using Prep = __m256i;
  GRAFT_TARGET_AVX512 static Prep load(const std::uint8_t* qs) { return x86::unpack_nibbles(qs); }
  GRAFT_TARGET_AVX512 static __m256i dot(Prep q, __m256i x, __m256i offsets) { return _mm256_dpbusd_epi32(offsets, q, x); }

  // [low nibbles | high nibbles] in both halves: one broadcast load and a per-quarter shift.
  using Prep512 = __m512i;
  GRAFT_TARGET_AVX512 static Prep512 load512(const std::uint8_t* qs) {
    const __m512i all = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(qs)));
    const __m512i shifted = _mm512_srlv_epi64(all, _mm512_setr_epi64(0, 0, 4, 4, 0, 0, 4, 4));
    return _mm512_and_si512(shifted, _mm512_set1_epi8(0x0F));
  }
  GRAFT_TARGET_AVX512 static __m512i dot512(Prep512 q, __m512i x, __m512i offsets) {
    return _mm512_dpbusd_epi32(offsets, q, x);
  }
};

}  // namespace

void q4_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  avx512_qgemm<Q4Avx512>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
