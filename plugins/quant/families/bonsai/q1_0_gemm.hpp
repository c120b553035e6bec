// Q1_0 weight x Q8_0-quantized activation kernels, one per SIMD level, all computing
// bonsai_gemm.hpp's sequence with one part per sub-block: lane g % 16 accumulates
// fma(float(exact sum of +-x_q over sub-block g), d_w * d_x[g]), then a fixed 16-lane tree.
#pragma once

#include <cstdint>

#include "driver/gemm.hpp"

namespace graft::quant {

// The vpmultishiftqb control of the AVX-512 kernels (file and packed layouts) for step q (0..7) and
// byte n (0..7) of a 64-bit word holding two 32-bit groups of sign bits: bit 32 * (n / 4) + 4q + n % 4
// lands at bit 1 of the byte (rotating, so bit 0 comes from bit 63), which makes u = 2 * bit = code + 1.
constexpr std::uint8_t q1_sign_step_ctrl(int q, int n) {
  return static_cast<std::uint8_t>((32 * (n / 4) + 4 * q + n % 4 + 63) & 63);
}

void q1_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q1_0_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
// Runs the AVX2 kernel on CPUs without AVX512-VBMI (identical results).
void q1_0_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
// AMX tiles for batches of 16 or more columns that fill their 16-column tiles well (amx_pays), the
// AVX-512 kernel otherwise (identical results).
void q1_0_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
