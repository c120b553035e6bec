// The row conversions of Q4_K and Q5_K (Bits = 4 or 5 code bits), which differ only in the fifth
// code bit: the quantizer is ours (k4_quantizer.hpp), dequantization is ggml's dequantize_row_q4_K /
// dequantize_row_q5_K operation for operation. Block is the format's block struct.
#pragma once

#include <cstdint>
#include <cstring>

#include "activations/q8k_activations.hpp"  // kQK_K
#include "families/kquants/k4_quantizer.hpp"
#include "families/kquants/k4_scales.hpp"
#include "half.hpp"

namespace graft::quant {

template <class Block, int Bits>
struct K4Rows {
  static_assert(Bits == 4 || Bits == 5);

  // FormatSpec::quantize_row.
  static void quantize(const float* x, void* dst, std::int64_t k) noexcept {
    auto* y = static_cast<Block*>(dst);
    for (std::int64_t i = 0; i < k / kQK_K; ++i, x += kQK_K) {
      K4Block b;
      quantize_k4_block(x, (1 << Bits) - 1, b);
      y[i].d = b.d;
      y[i].dmin = b.dmin;
      pack_scales_k4(b.sc, b.m, y[i].scales);
      if constexpr (Bits == 5) {
        std::memset(y[i].qh, 0, sizeof y[i].qh);
        for (int e = 0; e < kQK_K; ++e)
          y[i].qh[e % 32] = static_cast<std::uint8_t>(y[i].qh[e % 32] | ((b.q[e] >> 4) << (e / 32)));
      }
      for (int j = 0; j < 4; ++j)
        for (int l = 0; l < 32; ++l)
          y[i].qs[32 * j + l] = static_cast<std::uint8_t>((b.q[64 * j + l] & 0x0F) | ((b.q[64 * j + 32 + l] & 0x0F) << 4));
    }
  }

  // FormatSpec::dequantize_row.
  static void dequantize(const void* src, float* y, std::int64_t k) noexcept {
    const auto* x = static_cast<const Block*>(src);
    for (std::int64_t i = 0; i < k / kQK_K; ++i) {
      const float d = f16_to_f32(x[i].d), dmin = f16_to_f32(x[i].dmin);
      std::uint8_t sc[8], m[8];
      unpack_scales_k4(x[i].scales, sc, m);
      for (int j = 0; j < 4; ++j) {
        // ggml: d1 = d * sc, m1 = min * m, y = d1 * q - m1 (two roundings, no fma)
        const float d1 = d * sc[2 * j], m1 = dmin * m[2 * j];
        const float d2 = d * sc[2 * j + 1], m2 = dmin * m[2 * j + 1];
        const std::uint8_t* q = x[i].qs + 32 * j;
        for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>((q[l] & 0x0F) + high_bit(x[i], l, 2 * j)) - m1;
        for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>((q[l] >> 4) + high_bit(x[i], l, 2 * j + 1)) - m2;
      }
    }
  }

 private:
  // The fifth bit (16) of the code of element 32s + l: Q5_K keeps it in qh, Q4_K has none.
  static int high_bit(const Block& b, int l, int s) noexcept {
    if constexpr (Bits == 5) return ((b.qh[l] >> s) & 1) << 4;
    else return 0;
  }
};

}  // namespace graft::quant
