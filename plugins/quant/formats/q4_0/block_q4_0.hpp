// ggml's block_q4_0 (ggml-common.h): fields in order, no padding, an fp16 scale.
#pragma once

#include <cstdint>

namespace graft::quant {

inline constexpr int kQK4_0 = 32;  // elements per block

struct block_q4_0 {
  std::uint16_t d;               // fp16 scale
  std::uint8_t qs[kQK4_0 / 2];   // element j in the low nibble of qs[j], element j + 16 in the high one
};
static_assert(sizeof(block_q4_0) == 18);

}  // namespace graft::quant
