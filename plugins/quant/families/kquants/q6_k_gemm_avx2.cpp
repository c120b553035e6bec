// AVX2 Q6_K kernel: the decoded codes (0..63) times the activation quants with maddubs,
// 32 elements per step and madd applying the two sub-block scales (ggml's form);
// the -32 offset comes off once per super-block through the activation's 16-element sums.
#include "families/kquants/q6_k_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_Q6K_TARGET GRAFT_TARGET_AVX2
#define GRAFT_Q6K_AVX512 0
#include "families/kquants/q6_k_x86.hpp"

namespace graft::quant {

void q6_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<X86Q6K, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
