// ggml's block_tq2_0 (ggml-common.h): 256 ternary weights as 2-bit codes c in 0..2 (y = (c - 1) * d)
// and an fp16 scale. Element 128h + 32n + m has bits 2n of qs[32h + m], as in Q2_K.
#pragma once

#include <cstddef>
#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct block_tq2_0 {
  std::uint8_t qs[kQK_K / 4];
  std::uint16_t d;  // fp16 scale
};
static_assert(sizeof(block_tq2_0) == 66 && offsetof(block_tq2_0, d) == 64);

// The code (0..2) of element e of a block.
inline int tq2_0_code(const std::uint8_t* block, int e) { return (block[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3; }

}  // namespace graft::quant
