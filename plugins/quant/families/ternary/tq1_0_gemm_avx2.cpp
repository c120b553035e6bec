// AVX2 TQ1_0 kernel: each row's block expanded once to codes (tq1_0_expand.hpp), then per column
// ggml's sums: _mm256_maddubs_epi16 pairs accumulated in int16, widened to 8 int32 lanes by
// _mm256_madd_epi16, starting from -(bsum[2l] + bsum[2l+1]) (ternary_gemm_x86.hpp).
#include "families/ternary/tq1_0_gemm.hpp"

#ifdef __x86_64__
#define GRAFT_TQ1_TARGET GRAFT_TARGET_AVX2
#define GRAFT_TERNARY_TARGET GRAFT_TARGET_AVX2
#include "families/ternary/ternary_gemm_x86.hpp"
#include "families/ternary/tq1_0_expand.hpp"

namespace graft::quant {

void tq1_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<TernaryX86Gemm<TQ1Expand, TernaryMaddubsSums>, 4, 2>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
