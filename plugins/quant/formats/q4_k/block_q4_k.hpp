// ggml's block_q4_K (ggml-common.h): 256 weights as 8 sub-blocks of 32 4-bit codes,
// y = d * sc[j] * q - dmin * m[j], with 6-bit sc, m packed as families/kquants/k4_scales.hpp reads
// them and fp16 d, dmin.
#pragma once

#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct block_q4_k {
  std::uint16_t d;             // fp16 scale of the 6-bit sub-block scales
  std::uint16_t dmin;          // fp16 scale of the 6-bit sub-block mins
  std::uint8_t scales[12];     // 8 scales and 8 mins of 6 bits (packing: unpack_scales_k4)
  std::uint8_t qs[kQK_K / 2];  // element 64j + l in the low nibble of qs[32j + l], 64j + 32 + l in the high one
};
static_assert(sizeof(block_q4_k) == 144);

}  // namespace graft::quant
