// Activations quantized to Q8_K once per matmul, for the formats whose ggml vec_dot_type is Q8_K
// (Q2_K..Q6_K, TQ1_0, TQ2_0). ggml's x86 CPU backend uses quantize_row_q8_K_ref unchanged:
// per block of 256, max = the value of largest magnitude (first on ties), iscale = -127 / max,
// q = min(127, nearest_int(iscale * x)) (round half to even through the 1.5 * 2^23 trick),
// d = 1 / iscale (an f32, not fp16), bsums = sums of each 16 quants.
#pragma once

#include <cstdint>
#include <vector>

#include "activations/q8_activations.hpp"
#include "graft/backend.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

inline constexpr std::int64_t kQK_K = 256;

// Unpacked like Q8Activations so kernels load whole vectors.
struct Q8KActivations {
  std::int64_t n = 0;   // activation rows
  std::int64_t nb = 0;  // 256-blocks per row
  std::uint64_t generation = 0;  // as Q8Activations::generation
  AlignedVector<std::int8_t> qs;   // [n][nb][256]
  std::vector<float> d;            // [n][nb]
  AlignedVector<std::int16_t> bsums;  // [n][nb][16]
  // Sums of each 32 quants (bsums[2i] + bsums[2i + 1]), [n][nb][8], built only on request (the
  // Q4_K/Q5_K AVX2 batch tiles: their mins terms read them once per weight row tile, so they are
  // added once per call instead); empty otherwise.
  AlignedVector<std::int16_t> sums32;

  const std::int8_t* block_qs(std::int64_t row, std::int64_t b) const { return qs.data() + (row * nb + b) * kQK_K; }
  float scale(std::int64_t row, std::int64_t b) const { return d[static_cast<std::size_t>(row * nb + b)]; }
  const std::int16_t* block_bsums(std::int64_t row, std::int64_t b) const { return bsums.data() + (row * nb + b) * 16; }
  const std::int16_t* block_sums32(std::int64_t row, std::int64_t b) const { return sums32.data() + (row * nb + b) * 8; }

  // Column pairs (rows 2p, 2p + 1), built only for the AVX-512 batch tiles, block-major so a
  // tile's pairs for one block are adjacent (one pointer, constant offsets): per pair and block
  // kPairBytes = for each chunk j = 0..7 of 32 quants, 2p's then 2p + 1's (512) | bsums of 2p, of
  // 2p + 1 (16 int16 each) | scale of 2p x 8, of 2p + 1 x 8 (f32) | kLaneBias x the lane sums of
  // 2p, of 2p + 1 (8 int32 each: lane l = the quants 32j + 4l .. 32j + 4l + 3 over j). One 512-bit
  // load brings chunk j of both columns, and vpdpbusd against a weight chunk in both halves adds
  // each column's definition lanes l (the groups (j, l)) straight into dwords l and 8 + l; the
  // sums and scales land the same way in the halves of the f32 registers; the lane sums start the
  // accumulators of kernels whose weights are stored + kLaneBias (Q3_K).
  static constexpr std::int64_t kPairBsumsAt = 512, kPairScalesAt = 576, kPairLaneSumsAt = 640;
  static constexpr std::int64_t kPairBytes = 704;
  static constexpr std::int32_t kLaneBias = -124;
  std::int64_t n_pairs = 0;
  AlignedVector<std::int8_t> pairs;  // [nb][n_pairs][kPairBytes]

  const std::int8_t* pair_block(std::int64_t pair, std::int64_t b) const {
    return pairs.data() + (b * n_pairs + pair) * kPairBytes;
  }
};

// One row of k (a multiple of 256) values, exactly quantize_row_q8_K_ref; the AVX2 and AVX-512
// forms give identical bits (also for NaN, infinite, huge and denormal inputs), faster.
void quantize_q8k_row(const float* x, std::int64_t k, std::int8_t* qs, float* d, std::int16_t* bsums) noexcept;
void quantize_q8k_row_avx2(const float* x, std::int64_t k, std::int8_t* qs, float* d, std::int16_t* bsums) noexcept;
void quantize_q8k_row_avx512(const float* x, std::int64_t k, std::int8_t* qs, float* d, std::int16_t* bsums) noexcept;

// out[l] = bias * (sum of qs[32j + 4l .. 32j + 4l + 3] over j = 0..7), l < 8, for a block of 256
// quants: the pair layout's lane sums, in plain loops and with vpdpbusd (equal exact integers).
void q8k_lane_sums(const std::int8_t* qs, std::int32_t bias, std::int32_t* out) noexcept;
void q8k_lane_sums_avx512(const std::int8_t* qs, std::int32_t bias, std::int32_t* out) noexcept;

// All n rows of x (row stride k) with the row function of `level`; rows are split across the
// backend's threads when n is large. `pairs` also builds the column-pair layout, `sums32` the sums
// of 32.
void quantize_q8k_activations(Backend& backend, SimdLevel level, const float* x, std::int64_t n, std::int64_t k,
                              bool pairs, bool sums32, Q8KActivations& out);

}  // namespace graft::quant
