// The packing of the 6-bit sub-block scales and mins that ggml's block_q4_K and block_q5_K share
// (their 12 `scales` bytes), both ways.
#pragma once

#include <cstdint>
#include <cstring>

namespace graft::quant {

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
