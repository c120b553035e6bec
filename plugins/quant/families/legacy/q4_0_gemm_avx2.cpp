// AVX2 Q4_0 kernel: the unsigned codes q (0..15) go straight into _mm256_maddubs_epi16 against the
// signed activation quants (far from int16 saturation), _mm256_madd_epi16 makes the 8 lane sums,
// and adding the activation's precomputed -8 * sum(x) per lane turns sum(q * x) into
// sum((q - 8) * x).
#include "families/legacy/q4_0_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_QGEMM_TARGET GRAFT_TARGET_AVX2
#include "families/legacy/qgemm_x86.hpp"

namespace graft::quant {

namespace {

struct Q4Avx2 {
  static constexpr std::int64_t kBlockBytes = 18;
  static constexpr int kCols = 2;
  using Prep = __m256i;
  GRAFT_TARGET_AVX2 static Prep load(const std::uint8_t* qs) { return x86::unpack_nibbles(qs); }
  GRAFT_TARGET_AVX2 static __m256i dot(Prep q, __m256i x, __m256i offsets) {
    return _mm256_add_epi32(_mm256_madd_epi16(_mm256_maddubs_epi16(q, x), _mm256_set1_epi16(1)), offsets);
  }
};

}  // namespace

void q4_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  x86_qgemm<Q4Avx2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
