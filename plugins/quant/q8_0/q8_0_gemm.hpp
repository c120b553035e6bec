// Q8_0 weight x Q8_0-quantized activation kernels, one per SIMD level. Each output is
//   acc = 0; for each block b in order: acc = acc + (d_w[b] * d_x[b]) * float(isum_b)
// with isum_b the exact integer dot product of the block's quants (docs/formats.md).
#pragma once

#include "gemm.hpp"

namespace graft::quant {

void q8_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q8_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q8_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
