// AVX-512 VNNI TQ1_0 kernel: each row's block expanded once to codes (tq1_0_expand.hpp), then per
// column vpdpbusd (256-bit) of the codes against the Q8_K quants onto lanes that start from
// -(bsum[2l] + bsum[2l+1]): ggml's lane sums, exactly (ternary_gemm_x86.hpp).
#include "families/ternary/tq1_0_gemm.hpp"

#ifdef __x86_64__
#define GRAFT_TQ1_TARGET GRAFT_TARGET_AVX512
#define GRAFT_TERNARY_TARGET GRAFT_TARGET_AVX512
#include "families/ternary/ternary_gemm_x86.hpp"
#include "families/ternary/tq1_0_expand.hpp"

namespace graft::quant {

void tq1_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  using K = TernaryX86Gemm<TQ1Expand, TernaryVnniSums>;
  if (c1 - c0 == 1) walk_tiles<K, 4, 1>(a, r0, r1, c0, c1);
  else walk_tiles<K, 2, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
