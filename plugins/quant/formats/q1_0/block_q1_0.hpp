// The Bonsai 1-bit block (ggml-common.h block_q1_0). The kernels see it as 4 sub-blocks of 32
// elements, one per Q8_0 activation block (families/bonsai/bonsai_gemm.hpp).
#pragma once

#include <cstdint>

namespace graft::quant {

inline constexpr int kQK1_0 = 128;  // elements per block

// Element j is bit j % 8 of qs[j / 8]: 1 -> +d, 0 -> -d.
struct block_q1_0 {
  std::uint16_t d;  // fp16 scale
  std::uint8_t qs[kQK1_0 / 8];
};
static_assert(sizeof(block_q1_0) == 18);

}  // namespace graft::quant
