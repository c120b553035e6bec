// Q6_K weight x Q8_K-quantized activation kernels, one per SIMD level. Every level computes each
// output with the same f32 operations (docs/formats.md, "Determinism"), the structure of ggml's
// AVX2 ggml_vec_dot_q6_K_q8_K:
//   for each super-block b in order (codes u = q + 32 in 0..63, int8 sc[16] per 16 elements):
//     U[l] = sum over the 8 chunks c of 32 elements of
//            sc[2c + (l >= 4)] * sum_{e = 4l..4l+3} u[32c + e] * x[32c + e]   (l = 0..7, exact int)
//     S[l] = U[l] - 32 * (sc[2l] * bs[2l] + sc[2l+1] * bs[2l+1])            (bs = the activation's
//            16-element sums; exact int)
//     acc[l] = fma(float(S[l]), d_x * d_w, acc[l])
//   y = ((acc[0]+acc[4]) + (acc[2]+acc[6])) + ((acc[1]+acc[5]) + (acc[3]+acc[7]))
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q6_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q6_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q6_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
