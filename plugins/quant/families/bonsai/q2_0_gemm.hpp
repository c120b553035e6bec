// Q2_0 weight x Q8_0-quantized activation kernels, one per SIMD level, all computing
// bonsai_gemm.hpp's sequence with two parts per sub-block: lane 2 * (g % 8) + h accumulates
// fma(float(exact sum of (q - 1) * x_q over the elements e of sub-block g with (e / 4) % 2 == h),
// d_w * d_x[g]), then a fixed 16-lane tree.
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q2_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q2_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
// Runs the AVX2 kernel on CPUs without AVX512-VBMI (identical results).
void q2_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
