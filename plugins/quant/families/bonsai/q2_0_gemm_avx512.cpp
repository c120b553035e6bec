// AVX-512 Q2_0 kernel (bonsai_gemm_avx512.hpp): word i of the gathered codes is sub-block i (32
// two-bit codes); step q's multishift takes codes 8q .. 8q+7 into one byte each (lanes 2i and
// 2i+1: elements 8q + 4h + t), so 4 steps cover the 8 sub-blocks in 16 lanes.
#include "families/bonsai/q2_0_gemm.hpp"

#ifdef __x86_64__
#include "families/bonsai/bonsai_gemm_avx512.hpp"

namespace graft::quant {

namespace {

struct Q2Avx512 {
  static constexpr int kSubPerBlock = 2, kLanesPerSub = 2, kSteps = 4;
  static constexpr std::int64_t kBlockBytes = 18;
  static constexpr std::uint8_t ctrl_byte(int q, int n) { return static_cast<std::uint8_t>(16 * q + 2 * n); }
  GRAFT_TARGET_AVX512_VBMI static __m512i codes(__m512i ctrl, __m512i z) {
    return _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, z), _mm512_set1_epi8(3));
  }
};

}  // namespace

void q2_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (!bonsai_has_vbmi()) return q2_0_gemm_avx2(a, r0, r1, c0, c1);
  bonsai_avx512_gemm<Q2Avx512, 4, 2, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
