// Q8_0 rows to and from f32: ggml's quantize_row_q8_0_ref and dequantize_row_q8_0, operation for
// operation (files and KV caches match ggml's byte for byte). Shared by the q8_0 weight format and
// the quant KV store.
#pragma once

#include <cmath>
#include <cstdint>

#include "formats/q8_0/block_q8_0.hpp"
#include "half.hpp"

namespace graft::quant {

// k: a multiple of 32.
inline void quantize_row_q8_0(const float* x, block_q8_0* y, std::int64_t k) noexcept {
  for (std::int64_t i = 0; i < k / kQK8_0; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16_ggml(d);
    for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = static_cast<std::int8_t>(std::round(x[j] * id));  // roundf
  }
}

inline void dequantize_row_q8_0(const block_q8_0* x, float* y, std::int64_t k) noexcept {
  for (std::int64_t i = 0; i < k / kQK8_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = x[i].qs[j] * d;
  }
}

}  // namespace graft::quant
