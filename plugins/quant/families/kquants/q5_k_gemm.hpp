// Q5_K weight x Q8_K-quantized activation kernels, one per SIMD level. Every level computes each
// output with the same f32 operations (docs/formats.md, "Determinism"), the structure of ggml's
// AVX2 ggml_vec_dot_q5_K_q8_K:
//   for each super-block b in order (8 sub-blocks j of 32; codes q 0..31; 6-bit sc[j], m[j]):
//     S[l] = sum_j sc[j] * sum_{e = 4l..4l+3} q[32j + e] * x[32j + e]      (l = 0..7, exact int)
//     M    = sum_j m[j] * (bs[2j] + bs[2j+1])   (exact int; bs = the activation's 16-element sums)
//     acc[l] = fma(float(S[l]), d_x * d_w, acc[l])
//     summs  = fma(float(M), -(d_x * dmin_w), summs)
//   y = hsum8(acc) + summs
// ggml writes the last step as `summs += dmin * M`, which GCC contracts to this fma when it builds
// ggml-cpu for an FMA-capable target (KQuantGgml.* checks the bits against the shipped binaries).
#pragma once

#include "driver/gemm.hpp"

namespace graft::quant {

void q5_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q5_k_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q5_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
