#include "dense_gemm.hpp"

namespace graft::quant {

GemmFn dense_gemm(SimdLevel level, DenseType type) noexcept {
  switch (level) {
    case SimdLevel::scalar: return dense_gemm_scalar(type);
    case SimdLevel::avx2: return dense_gemm_avx2(type);
    case SimdLevel::avx512: return dense_gemm_avx512(type);
    case SimdLevel::amx: return nullptr;  // the avx512 kernels run (kernel_level)
  }
  return nullptr;
}

}  // namespace graft::quant
