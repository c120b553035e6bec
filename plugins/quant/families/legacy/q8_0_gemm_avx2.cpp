// AVX2 Q8_0 kernel: ggml's sign trick (|w| as unsigned bytes, x carrying w's sign) feeds
// _mm256_maddubs_epi16 without saturation (|w| <= 128, |x| <= 127); _mm256_madd_epi16 then
// leaves the 8 lane sums of 4 products. (w + 128 would saturate maddubs, so no offset form here.)
#include "families/legacy/q8_0_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_QGEMM_TARGET GRAFT_TARGET_AVX2
#include "families/legacy/qgemm_x86.hpp"

namespace graft::quant {

namespace {

struct Q8Avx2 {
  static constexpr std::int64_t kBlockBytes = 34;
  static constexpr int kCols = 2;
  struct Prep {
    __m256i w, abs_w;
  };
  GRAFT_TARGET_AVX2 static Prep load(const std::uint8_t* qs) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs));
    return {w, _mm256_sign_epi8(w, w)};
  }
  GRAFT_TARGET_AVX2 static __m256i dot(const Prep& p, __m256i x, __m256i) {
    const __m256i pairs = _mm256_maddubs_epi16(p.abs_w, _mm256_sign_epi8(x, p.w));
    return _mm256_madd_epi16(pairs, _mm256_set1_epi16(1));
  }
};

}  // namespace

void q8_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  x86_qgemm<Q8Avx2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
