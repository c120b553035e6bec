// AVX2 Q5_K kernel: ggml's integer dot (maddubs of the unsigned 5-bit codes with the activation quants,
// madd with the sub-block scales), one 32-element sub-block per step.
#include "families/kquants/q5_k_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_Q4K_TARGET GRAFT_TARGET_AVX2
#define GRAFT_Q4K_AVX512 0
#include "families/kquants/k4_gemm_x86.hpp"

namespace graft::quant {

void q5_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 == 1) walk_tiles<X86K4<5>, 4, 1>(a, r0, r1, c0, c1);
  else walk_tiles<X86K4<5>, 2, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
