// ggml's block_tq1_0 (ggml-common.h): 256 ternary weights, codes c in 0..2 (y = (c - 1) * d) packed
// in base 3, five per byte in qs and four per byte in qh, and an fp16 scale. A byte holds its trits
// as a fixed-point fraction, ceil(v * 256 / 243) for v = c0 c1 c2 c3 c4 in base 3. Elements: 0..159
// are trit e / 32 of qs[e % 32]; 160..239 trit (e - 160) / 16 of qs[32 + (e - 160) % 16]; 240..255
// trit (e - 240) / 4 of qh[(e - 240) % 4].
#pragma once

#include <cstddef>
#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct block_tq1_0 {
  std::uint8_t qs[(kQK_K - 4 * kQK_K / 64) / 5];  // 48
  std::uint8_t qh[kQK_K / 64];                    // 4
  std::uint16_t d;                                // fp16 scale
};
static_assert(sizeof(block_tq1_0) == 54 && offsetof(block_tq1_0, d) == 52);

// The code (0..2) of element e of a block: ggml's trit n of a byte, ((uint8)(byte * 3^n) * 3) >> 8.
inline int tq1_0_code(const std::uint8_t* block, int e) {
  constexpr std::uint8_t kPow3[5] = {1, 3, 9, 27, 81};
  int byte, n;
  if (e < 160) {
    byte = e % 32;
    n = e / 32;
  } else if (e < 240) {
    byte = 32 + (e - 160) % 16;
    n = (e - 160) / 16;
  } else {
    byte = 48 + (e - 240) % 4;
    n = (e - 240) / 4;
  }
  const auto q = static_cast<std::uint8_t>(block[byte] * kPow3[n]);
  return (static_cast<std::uint16_t>(q) * 3) >> 8;
}

}  // namespace graft::quant
