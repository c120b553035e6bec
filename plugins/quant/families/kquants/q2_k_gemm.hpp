// Q2_K weight x Q8_K activation kernels, one per SIMD level. Every level computes each output with
// the same f32 operations, those of ggml's AVX2 ggml_vec_dot_q2_K_q8_K:
//   for each super-block b in order, with 8 lanes l:
//     M[l] = m[2l] * bsum[2l] + m[2l+1] * bsum[2l+1]          (exact; m = 4-bit mins, bsum = Q8_K sums of 16)
//     S[l] = sum over v = 0..7 of sc[2v + l/4] * (sum of q * x over elements 32v + 4l .. 32v + 4l + 3)
//     acc[l] = fma(-d_x * dmin_w, float(M[l]), acc[l])
//     acc[l] = fma(d_x * d_w, float(S[l]), acc[l])
//   y = ((acc[l] + acc[l+4]) + 2 apart) + 1 apart
// Element order is the Q8_K one (q8 element e = 128h + 32s + i has code bits 2s of qs[32h + i]).
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q2_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q2_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q2_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
