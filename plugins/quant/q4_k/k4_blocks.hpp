// ggml's block_q4_K and block_q5_K (ggml-common.h), which share the packing of their 6-bit scales
// and mins, and the unpacking of that packing.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "q8k_activations.hpp"  // kQK_K

namespace graft::quant {

struct BlockQ4_K {
  std::uint16_t d;            // fp16 scale of the 6-bit sub-block scales
  std::uint16_t dmin;         // fp16 scale of the 6-bit sub-block mins
  std::uint8_t scales[12];    // 8 scales and 8 mins of 6 bits (packing: unpack_scales_k4)
  std::uint8_t qs[kQK_K / 2]; // element 64j + l in the low nibble of qs[32j + l], 64j + 32 + l in the high one
};
static_assert(sizeof(BlockQ4_K) == 144);

struct BlockQ5_K {
  std::uint16_t d;
  std::uint16_t dmin;
  std::uint8_t scales[12];
  std::uint8_t qh[kQK_K / 8];  // bit j of qh[l]: the top (16) bit of element 32j + l
  std::uint8_t qs[kQK_K / 2];  // low 4 bits, as Q4_K's qs
};
static_assert(sizeof(BlockQ5_K) == 176);

// Where the kernels find things, by code width.
template <int Bits>
struct K4Layout {
  static_assert(Bits == 4 || Bits == 5);
  static constexpr std::size_t kBlockBytes = Bits == 4 ? sizeof(BlockQ4_K) : sizeof(BlockQ5_K);
  static constexpr std::size_t kQsOffset = Bits == 4 ? offsetof(BlockQ4_K, qs) : offsetof(BlockQ5_K, qs);
  static constexpr std::size_t kQhOffset = offsetof(BlockQ5_K, qh);  // Bits == 5 only
};

// sc[j], m[j] for the 8 sub-blocks of 32: j < 4 in the low 6 bits of bytes j and j + 4; j >= 4 in
// the nibbles of byte j + 4 with their top 2 bits in the top bits of bytes j - 4 (scale) and j (min).
inline void unpack_scales_k4(const std::uint8_t* s, std::uint8_t* sc, std::uint8_t* m) noexcept {
  std::uint32_t u[3];
  std::memcpy(u, s, 12);
  const std::uint32_t w[4] = {
      u[0] & 0x3F3F3F3Fu,                                          // sc0..3
      (u[2] & 0x0F0F0F0Fu) | (((u[0] >> 6) & 0x03030303u) << 4),   // sc4..7
      u[1] & 0x3F3F3F3Fu,                                          // m0..3
      ((u[2] >> 4) & 0x0F0F0F0Fu) | (((u[1] >> 6) & 0x03030303u) << 4),  // m4..7
  };
  std::memcpy(sc, w, 8);
  std::memcpy(m, w + 2, 8);
}

// The inverse: packs 8 scales and 8 mins (each < 64).
inline void pack_scales_k4(const std::uint8_t* sc, const std::uint8_t* m, std::uint8_t* s) noexcept {
  for (int j = 0; j < 4; ++j) {
    s[j] = static_cast<std::uint8_t>(sc[j] | ((sc[j + 4] >> 4) << 6));
    s[j + 4] = static_cast<std::uint8_t>(m[j] | ((m[j + 4] >> 4) << 6));
    s[j + 8] = static_cast<std::uint8_t>((sc[j + 4] & 0x0F) | ((m[j + 4] & 0x0F) << 4));
  }
}

}  // namespace graft::quant
