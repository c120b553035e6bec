// Q3_K weight x Q8_K activation kernels, one per SIMD level. Every level computes each output with
// the same f32 operations, those of ggml's AVX2 ggml_vec_dot_q3_K_q8_K:
//   for each super-block b in order, with 8 lanes l:
//     S[l] = sum over v = 0..7 of (s[2v + l/4] - 32) * (sum of q * x over elements 32v + 4l .. 32v + 4l + 3)
//     acc[l] = fma(d_x * d_w, float(S[l]), acc[l])          (q = signed codes -4..3, exact integers)
//   y = ((acc[l] + acc[l+4]) + 2 apart) + 1 apart
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q3_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q3_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q3_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
