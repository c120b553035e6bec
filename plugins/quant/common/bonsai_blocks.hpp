// The Bonsai block layouts (ggml-common.h block_q1_0 / block_q2_0), and how the Q1_0/Q2_0 kernels
// see them: sub-blocks of 32 elements, one per Q8_0 activation block.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::quant {

inline constexpr int kQK1_0 = 128;  // elements per Q1_0 block
inline constexpr int kQK2_0 = 64;   // elements per Q2_0 block

// Element j is bit j % 8 of qs[j / 8]: 1 -> +d, 0 -> -d.
struct BlockQ1_0 {
  std::uint16_t d;
  std::uint8_t qs[kQK1_0 / 8];
};
static_assert(sizeof(BlockQ1_0) == 18);

// Element j is q = (qs[j / 4] >> 2 * (j % 4)) & 3, y = (q - 1) * d.
struct BlockQ2_0 {
  std::uint16_t d;
  std::uint8_t qs[kQK2_0 / 4];
};
static_assert(sizeof(BlockQ2_0) == 18);

// The legacy layout that old PrismML files stored under id 42: one fp16 scale per 128 elements and
// 32 bytes of 2-bit codes (34 bytes; the fork's later PQ2_0, id 142).
inline constexpr int kLegacyQ2Elems = 128;
inline constexpr int kLegacyQ2Bytes = 34;

}  // namespace graft::quant
