// The Bonsai 2-bit block (ggml-common.h block_q2_0). The kernels see it as 2 sub-blocks of 32
// elements, one per Q8_0 activation block (families/bonsai/bonsai_gemm.hpp).
#pragma once

#include <cstdint>

namespace graft::quant {

inline constexpr int kQK2_0 = 64;  // elements per block

// Element j is q = (qs[j / 4] >> 2 * (j % 4)) & 3, y = (q - 1) * d.
struct block_q2_0 {
  std::uint16_t d;  // fp16 scale
  std::uint8_t qs[kQK2_0 / 4];
};
static_assert(sizeof(block_q2_0) == 18);

}  // namespace graft::quant
