// AVX-512 VNNI Q5_K kernel: two sub-blocks (64 elements) per 512-bit maddubs, and vpdpwssd applies
// the two sub-block scales and accumulates in one instruction; the two 256-bit halves are added
// at the end of the super-block (exact integers, so the same S[l] as AVX2 and scalar).
#include "families/kquants/q5_k_gemm.hpp"

#ifdef __x86_64__
#include "simd/x86_simd.hpp"
#define GRAFT_Q4K_TARGET GRAFT_TARGET_AVX512
#define GRAFT_Q4K_AVX512 1
#include "families/kquants/k4_gemm_x86.hpp"

namespace graft::quant {

void q5_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<X86K4<5>, 4, 8>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
