// ggml's block_q5_K (ggml-common.h): 256 weights as 8 sub-blocks of 32 5-bit codes,
// y = d * sc[j] * q - dmin * m[j], with Q4_K's packing of the 6-bit sc, m
// (families/kquants/k4_scales.hpp) and fp16 d, dmin.
#pragma once

#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct block_q5_k {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[kQK_K / 8];  // bit j of qh[l]: the top (16) bit of element 32j + l
  std::uint8_t qs[kQK_K / 2];  // low 4 bits, as Q4_K's qs
};
static_assert(sizeof(block_q5_k) == 176);

}  // namespace graft::quant
