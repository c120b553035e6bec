// Activations quantized to Q8_K once per matmul, for the formats whose ggml vec_dot_type is Q8_K
// (Q2_K..Q6_K, TQ1_0, TQ2_0). ggml's x86 CPU backend uses quantize_row_q8_K_ref unchanged:
// per block of 256, max = the value of largest magnitude (first on ties), iscale = -127 / max,
// q = min(127, nearest_int(iscale * x)) (round half to even through the 1.5 * 2^23 trick),
// d = 1 / iscale (an f32, not fp16), bsums = sums of each 16 quants.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/backend.hpp"
#include "q8_activations.hpp"

namespace graft::quant {

inline constexpr std::int64_t kQK_K = 256;

// Unpacked like Q8Activations so kernels load whole vectors.
struct Q8KActivations {
  std::int64_t n = 0;   // activation rows
  std::int64_t nb = 0;  // 256-blocks per row
  AlignedVector<std::int8_t> qs;   // [n][nb][256]
  std::vector<float> d;            // [n][nb]
  AlignedVector<std::int16_t> bsums;  // [n][nb][16]

  const std::int8_t* block_qs(std::int64_t row, std::int64_t b) const { return qs.data() + (row * nb + b) * kQK_K; }
  float scale(std::int64_t row, std::int64_t b) const { return d[static_cast<std::size_t>(row * nb + b)]; }
  const std::int16_t* block_bsums(std::int64_t row, std::int64_t b) const { return bsums.data() + (row * nb + b) * 16; }
};

// One row of k (a multiple of 256) values, exactly quantize_row_q8_K_ref.
void quantize_q8k_row(const float* x, std::int64_t k, std::int8_t* qs, float* d, std::int16_t* bsums) noexcept;

// All n rows of x (row stride k); rows are split across the backend's threads when n is large.
void quantize_q8k_activations(Backend& backend, const float* x, std::int64_t n, std::int64_t k, Q8KActivations& out);

}  // namespace graft::quant
