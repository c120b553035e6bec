// TQ2_0 weight x Q8_K activation kernels, one per SIMD level. Every level computes each output with
// the same f32 operations, those of ggml's AVX2 ggml_vec_dot_tq2_0_q8_K:
//   for each super-block b in order, with 8 lanes l:
//     S[l] = (sum of c * x over elements 32v + 4l .. 32v + 4l + 3, v = 0..7) - bsum[2l] - bsum[2l+1]
//     acc[l] = fma(float(S[l]), d_x * d_w, acc[l])
//   y = ((acc[l] + acc[l+4]) + 2 apart) + 1 apart
// c = the codes 0..2 (the weight is c - 1), bsum = Q8_K sums of 16; S is exact. ggml's source
// writes a multiply and an add, which the compiler fuses: the prebuilt libggml-cpu that
// node-llama-cpp ships runs vfmadd231ps there, and we match that (GgmlLibrary test).
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void tq2_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void tq2_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void tq2_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
