// ggml's block layouts (ggml-common.h): fields in order, no padding, fp16 scales.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::quant {

inline constexpr int kQK = 32;  // elements per Q8_0 / Q4_0 block

struct BlockQ8_0 {
  std::uint16_t d;         // fp16 scale
  std::int8_t qs[kQK];     // y = qs[j] * d
};
static_assert(sizeof(BlockQ8_0) == 34);

struct BlockQ4_0 {
  std::uint16_t d;            // fp16 scale
  std::uint8_t qs[kQK / 2];   // element j in the low nibble of qs[j], element j + 16 in the high one
};
static_assert(sizeof(BlockQ4_0) == 18);

}  // namespace graft::quant
