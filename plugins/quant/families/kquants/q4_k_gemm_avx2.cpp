// AVX2 Q4_K kernel: ggml's integer dot (maddubs of the unsigned codes with the activation quants,
// madd with the sub-block scales), one 32-element sub-block per step.
#include "families/kquants/q4_k_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_Q4K_TARGET GRAFT_TARGET_AVX2
#define GRAFT_Q4K_AVX512 0
#include "families/kquants/k4_gemm_x86.hpp"

namespace graft::quant {

void q4_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 == 1) walk_tiles<X86K4<4>, 4, 1>(a, r0, r1, c0, c1);
  // Batches 2 x 8: each row's codes and scale vectors of a step serve 8 columns (the f32
  // accumulators, touched once a block, live on the stack); faster than 2 x 4 (docs/benchmarks_avx2.md).
  else walk_tiles<X86K4<4>, 2, 8>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
