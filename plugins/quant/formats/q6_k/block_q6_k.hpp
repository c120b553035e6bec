// ggml's block_q6_K (ggml-common.h): 16 sub-blocks of 16 6-bit codes with int8 scales and an fp16
// super-block scale, y = d * sc[e / 16] * (q - 32) (210 bytes, 6.5625 bits per weight).
#pragma once

#include <cstdint>

#include "activations/q8k_activations.hpp"  // kQK_K

namespace graft::quant {

// In each half n of 128 elements, element 128n + 32t + l (t = 0..3, l = 0..31) keeps its low 4 bits
// in ql[64n + l + 32 * (t & 1)] (low nibble for t < 2, high for t >= 2) and its top 2 bits in bits
// 2t, 2t + 1 of qh[32n + l].
struct block_q6_k {
  std::uint8_t ql[kQK_K / 2];
  std::uint8_t qh[kQK_K / 4];
  std::int8_t scales[kQK_K / 16];
  std::uint16_t d;  // fp16
};
static_assert(sizeof(block_q6_k) == 210);

// The codes (q + 32, 0..63) of one super-block in element order.
inline void unpack_q6_k_codes(const block_q6_k& b, std::uint8_t* q) noexcept {
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      const std::uint8_t lo0 = b.ql[64 * n + l], lo1 = b.ql[64 * n + 32 + l], h = b.qh[32 * n + l];
      q[128 * n + l] = static_cast<std::uint8_t>((lo0 & 0x0F) | ((h & 3) << 4));
      q[128 * n + 32 + l] = static_cast<std::uint8_t>((lo1 & 0x0F) | (((h >> 2) & 3) << 4));
      q[128 * n + 64 + l] = static_cast<std::uint8_t>((lo0 >> 4) | (((h >> 4) & 3) << 4));
      q[128 * n + 96 + l] = static_cast<std::uint8_t>((lo1 >> 4) | (((h >> 6) & 3) << 4));
    }
}

// The inverse of unpack_q6_k_codes.
inline void pack_q6_k_codes(const std::uint8_t* q, block_q6_k& b) noexcept {
  for (int n = 0; n < 2; ++n)
    for (int l = 0; l < 32; ++l) {
      const std::uint8_t* v = q + 128 * n + l;
      b.ql[64 * n + l] = static_cast<std::uint8_t>((v[0] & 0x0F) | ((v[64] & 0x0F) << 4));
      b.ql[64 * n + 32 + l] = static_cast<std::uint8_t>((v[32] & 0x0F) | ((v[96] & 0x0F) << 4));
      b.qh[32 * n + l] = static_cast<std::uint8_t>((v[0] >> 4) | ((v[32] >> 4) << 2) | ((v[64] >> 4) << 4) | ((v[96] >> 4) << 6));
    }
}

}  // namespace graft::quant
