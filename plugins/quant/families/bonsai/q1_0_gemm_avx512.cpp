// AVX-512 Q1_0 kernel (bonsai_gemm_avx512.hpp): word i of the gathered codes holds sub-blocks 2i
// and 2i+1 (32 bits each); step q's multishift moves bit 4q + t of each into bit 1 of a byte
// (u = 2 * bit, code + 1), so 8 steps cover the 32 elements of all 16 sub-blocks.
#include "families/bonsai/q1_0_gemm.hpp"

#ifdef __x86_64__
#include "families/bonsai/bonsai_gemm_avx512.hpp"

namespace graft::quant {

namespace {

struct Q1Avx512 {
  static constexpr int kSubPerBlock = 4, kLanesPerSub = 1, kSteps = 8;
  static constexpr std::int64_t kBlockBytes = 18;
  // Byte n of a word, step q: the bit of element 4q + n % 4 of sub-block n / 4 of the word, one
  // position up (rotating, so bit 0 comes from bit 63).
  static constexpr std::uint8_t ctrl_byte(int q, int n) { return q1_sign_step_ctrl(q, n); }
  // (vpshufbitqmb + a zero-masked move does the same in two instructions, measured 25% slower.)
  GRAFT_TARGET_AVX512_VBMI static __m512i codes(__m512i ctrl, __m512i z) {
    return _mm512_and_si512(_mm512_multishift_epi64_epi8(ctrl, z), _mm512_set1_epi8(2));
  }
};

}  // namespace

void q1_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (!bonsai_has_vbmi()) return q1_0_gemm_avx2(a, r0, r1, c0, c1);
  bonsai_avx512_gemm<Q1Avx512, 4, 2, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
