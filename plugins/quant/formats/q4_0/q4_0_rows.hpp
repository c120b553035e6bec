// Q4_0 rows to and from f32: ggml's quantize_row_q4_0_ref and dequantize_row_q4_0, operation for
// operation: the scale is the signed value of largest magnitude (the first one on ties) divided by
// -8. Shared by the q4_0 weight format and the quant KV store.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "formats/q4_0/block_q4_0.hpp"
#include "half.hpp"

namespace graft::quant {

// k: a multiple of 32.
inline void quantize_row_q4_0(const float* x, block_q4_0* y, std::int64_t k) noexcept {
  for (std::int64_t i = 0; i < k / kQK4_0; ++i, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16_ggml(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const float x0 = x[j] * id, x1 = x[kQK4_0 / 2 + j] * id;
      // ggml: MIN(15, (int8_t)(x + 8.5f)); the float-to-int conversion truncates.
      const auto q0 = static_cast<std::uint8_t>(std::min(15, static_cast<int>(static_cast<std::int8_t>(x0 + 8.5f))));
      const auto q1 = static_cast<std::uint8_t>(std::min(15, static_cast<int>(static_cast<std::int8_t>(x1 + 8.5f))));
      y[i].qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
  }
}

inline void dequantize_row_q4_0(const block_q4_0* x, float* y, std::int64_t k) noexcept {
  for (std::int64_t i = 0; i < k / kQK4_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[i * kQK4_0 + j] = ((x[i].qs[j] & 0x0F) - 8) * d;
      y[i * kQK4_0 + j + kQK4_0 / 2] = ((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

}  // namespace graft::quant
