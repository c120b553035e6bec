// ggml's block_q8_0 (ggml-common.h): fields in order, no padding, an fp16 scale.
#pragma once

#include <cstdint>

namespace graft::quant {

inline constexpr int kQK8_0 = 32;  // elements per block

struct block_q8_0 {
  std::uint16_t d;          // fp16 scale
  std::int8_t qs[kQK8_0];   // y = qs[j] * d
};
static_assert(sizeof(block_q8_0) == 34);

}  // namespace graft::quant
