// Q4_0 weight x Q8_0-quantized activation kernels, one per SIMD level. Every level computes each
// output with the same f32 operations (docs/formats.md, "Determinism"):
//   for each block b in order, for each lane l (block elements 4l .. 4l+3):
//     acc[l] = fma(float(P[b][l]), d_w[b] * d_x[b], acc[l])     P = exact integer dot of the 4 (q - 8) * x
//   y = ((acc[l] + acc[l+4]) + 2 apart) + 1 apart
// which is the structure of ggml's AVX2 vec_dot (per-lane _mm256_fmadd_ps, then hsum_float_8).
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q4_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q4_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q4_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
