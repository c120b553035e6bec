// Q4_K weight x Q8_K-quantized activation kernels, one per SIMD level. Every level computes each
// output with the same f32 operations (docs/formats.md, "Determinism"), the structure of ggml's
// AVX2 ggml_vec_dot_q4_K_q8_K:
//   for each super-block b in order (8 sub-blocks j of 32; codes q 0..15; 6-bit sc[j], m[j]):
//     S[l] = sum_j sc[j] * sum_{e = 4l..4l+3} q[32j + e] * x[32j + e]      (l = 0..7, exact int)
//     M[i] = m[2i] * (bs[4i] + bs[4i+1]) + m[2i+1] * (bs[4i+2] + bs[4i+3])  (i = 0..3, exact int;
//            bs = the activation's 16-element sums)
//     acc[l]  = fma(float(S[l]), d_x * d_w, acc[l])
//     accm[i] = fma(float(M[i]), -(d_x * dmin_w), accm[i])
//   y = hsum8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]))
// with hsum8 = ((acc[0]+acc[4]) + (acc[2]+acc[6])) + ((acc[1]+acc[5]) + (acc[3]+acc[7])).
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q4_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q4_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q4_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
