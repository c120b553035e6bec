// AVX2 Q2_0 kernel: a sub-block's 8 code bytes widen to 8 dwords (one per 4 elements), and two
// shift-or steps put code t of each into byte t (u = q, code + 1); bonsai_gemm_avx2.hpp does the rest.
#include "families/bonsai/q2_0_gemm.hpp"

#ifdef __x86_64__
#include "families/bonsai/bonsai_gemm_avx2.hpp"

namespace graft::quant {

namespace {

struct Q2Avx2 {
  static constexpr int kSubPerBlock = 2, kLanesPerSub = 2;
  static constexpr std::int64_t kBlockBytes = 18;
  GRAFT_TARGET_AVX2 static __m256i unpack(const std::uint8_t* qs, int sb) {
    const __m256i d = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(qs + 8 * sb)));
    // Byte b = code t of the dword's byte: d | d << 6 puts code 1 at bits 8-9 (and code 3 at 12-13),
    // then e | e << 12 puts code 2 at bits 16-17 and code 3 at 24-25; the mask keeps those.
    const __m256i e = _mm256_or_si256(d, _mm256_slli_epi32(d, 6));
    const __m256i f = _mm256_or_si256(e, _mm256_slli_epi32(e, 12));
    return _mm256_and_si256(f, _mm256_set1_epi32(0x03030303));
  }
};

}  // namespace

void q2_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  bonsai_avx2_gemm<Q2Avx2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
