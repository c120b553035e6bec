// Portable Q5_K kernel: the definition the SIMD kernels reproduce bit for bit (q5_k_gemm.hpp).
#include "families/kquants/k4_gemm_scalar.hpp"
#include "families/kquants/q5_k_gemm.hpp"

namespace graft::quant {

void q5_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarK4<5>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
