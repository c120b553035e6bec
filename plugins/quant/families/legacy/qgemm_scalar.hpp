// The portable form of the quantized kernels' defined computation, shared by Q8_0 and Q4_0:
// `Weights::decode(block, codes)` turns one weight block into 32 signed codes and its fp16 scale.
// std::fma is the same correctly rounded operation as the SIMD kernels' vfmadd (glibc runs the
// instruction where the CPU has it and an exact software version where it does not).
#pragma once

#include <cmath>

#include "driver/gemm.hpp"
#include "half.hpp"

namespace graft::quant {

template <class Weights>
struct ScalarQGemm {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / 32;
    const std::uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    float acc[R][C][8] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      int codes[R][32];
      float dw[R];
      for (int i = 0; i < R; ++i) dw[i] = f16_to_f32(Weights::decode(w[i] + b * Weights::kBlockBytes, codes[i]));
      for (int j = 0; j < C; ++j) {
        const std::int8_t* xq = a.xq->block_qs(c + j, b);
        const float dx = a.xq->scales(c + j)[b];
        for (int i = 0; i < R; ++i) {
          const float s = dw[i] * dx;
          for (int l = 0; l < 8; ++l) {
            std::int32_t p = 0;
            for (int e = 4 * l; e < 4 * l + 4; ++e) p += codes[i][e] * xq[e];
            acc[i][j][l] = std::fma(static_cast<float>(p), s, acc[i][j][l]);
          }
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const float* v = acc[i][j];
        const float h0 = v[0] + v[4], h1 = v[1] + v[5], h2 = v[2] + v[6], h3 = v[3] + v[7];
        const float q0 = h0 + h2, q1 = h1 + h3;
        a.y[(c + j) * a.y_stride + r + i] = q0 + q1;
      }
  }
};

}  // namespace graft::quant
