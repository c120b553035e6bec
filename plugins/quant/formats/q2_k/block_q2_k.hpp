// ggml's block_q2_K (ggml-common.h): 256 weights as 16 sub-blocks of 16, each y = d * sc * q - dmin * m
// with 2-bit codes q, 4-bit scale sc and 4-bit min m per sub-block, fp16 super-scales d and dmin.
#pragma once

#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct block_q2_k {
  std::uint8_t scales[16];  // sub-block j: scale in the low nibble, min in the high one
  std::uint8_t qs[64];      // element 128h + 32s + i: bits 2s..2s+1 of qs[32h + i]
  std::uint16_t d;          // fp16 super-scale of the scales
  std::uint16_t dmin;       // fp16 super-scale of the mins
};
static_assert(sizeof(block_q2_k) == 84);

// The 2-bit code of element e (0..255).
inline int q2k_code(const block_q2_k& b, int e) {
  return (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

}  // namespace graft::quant
