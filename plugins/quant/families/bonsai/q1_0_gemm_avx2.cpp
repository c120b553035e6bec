// AVX2 Q1_0 kernel: a sub-block's 32 sign bits become bytes u = 2 * bit (0 or 2, code + 1) with
// ggml's broadcast / shuffle / compare expansion; bonsai_gemm_avx2.hpp does the rest.
#include "families/bonsai/q1_0_gemm.hpp"

#ifdef __x86_64__
#include "families/bonsai/bonsai_gemm_avx2.hpp"

namespace graft::quant {

namespace {

struct Q1Avx2 {
  static constexpr int kSubPerBlock = 4, kLanesPerSub = 1;
  static constexpr std::int64_t kBlockBytes = 18;
  GRAFT_TARGET_AVX2 static __m256i unpack(const std::uint8_t* qs, int sb) {
    std::uint32_t bits;
    std::memcpy(&bits, qs + 4 * sb, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int>(bits)),
        _mm256_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3));
    const __m256i bit = _mm256_set1_epi64x(static_cast<long long>(0x8040201008040201ull));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    return _mm256_and_si256(set, _mm256_set1_epi8(2));
  }
};

}  // namespace

void q1_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  bonsai_avx2_gemm<Q1Avx2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
