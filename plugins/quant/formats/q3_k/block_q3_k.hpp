// ggml's block_q3_K (ggml-common.h): 256 weights as 16 sub-blocks of 16, y = (d * (s - 32)) * q with
// signed 3-bit codes q in -4..3 (2 low bits in qs, the high bit in hmask, q = low + 4 * high - 4),
// 6-bit scales s packed in 12 bytes, and one fp16 super-scale d.
#pragma once

#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct block_q3_k {
  std::uint8_t hmask[32];   // element e: bit e / 32 of hmask[e % 32]
  std::uint8_t qs[64];      // element 128h + 32s + i: bits 2s..2s+1 of qs[32h + i]
  std::uint8_t scales[12];  // 16 six-bit scales (q3k_scale)
  std::uint16_t d;          // fp16 super-scale
};
static_assert(sizeof(block_q3_k) == 110);

// The 6-bit scale of sub-block j (0..63; the multiplier is this - 32).
inline int q3k_scale(const std::uint8_t* b, int j) {
  const int low = (b[j % 8] >> (4 * (j / 8))) & 15;
  return low | (((b[8 + j % 4] >> (2 * (j / 4))) & 3) << 4);
}

// The signed code of element e (-4..3).
inline int q3k_code(const block_q3_k& b, int e) {
  const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
  const int high = (b.hmask[e % 32] >> (e / 32)) & 1;
  return low + 4 * high - 4;
}

}  // namespace graft::quant

namespace graft::quant {

// The 16 six-bit scales (0..63) as bytes, four at a time from 32-bit words, as ggml's kernels do.
inline void q3k_unpack_scales(const std::uint8_t* b, std::uint32_t out[4]) {
  std::uint32_t w[3];
  for (int i = 0; i < 3; ++i)
    w[i] = static_cast<std::uint32_t>(b[4 * i]) | (static_cast<std::uint32_t>(b[4 * i + 1]) << 8) |
           (static_cast<std::uint32_t>(b[4 * i + 2]) << 16) | (static_cast<std::uint32_t>(b[4 * i + 3]) << 24);
  constexpr std::uint32_t kLow = 0x0F0F0F0F, kTwo = 0x03030303;
  out[0] = (w[0] & kLow) | (((w[2] >> 0) & kTwo) << 4);
  out[1] = (w[1] & kLow) | (((w[2] >> 2) & kTwo) << 4);
  out[2] = ((w[0] >> 4) & kLow) | (((w[2] >> 4) & kTwo) << 4);
  out[3] = ((w[1] >> 4) & kLow) | (((w[2] >> 6) & kTwo) << 4);
}

}  // namespace graft::quant
