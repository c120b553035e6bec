// The portable form of the ternary kernels (TQ1_0, TQ2_0): the f32 definition their SIMD kernels
// reproduce bit for bit (tq1_0_gemm.hpp, tq2_0_gemm.hpp). The two formats store the same values
// (code c in 0..2 meaning c - 1, an fp16 scale per 256) and differ only in packing, which the
// weight policy W supplies: W::kBlockBytes, W::kScaleOffset (byte offset of the fp16 scale) and
// W::code(block, e) -> the code of element e.
#pragma once

#include <cmath>
#include <cstdint>

#include "driver/gemm.hpp"

namespace graft::quant {

template <class W>
struct ScalarTernaryGemm {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / 256;
    float acc[R][C][8] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      int codes[R][256];
      float dw[R];
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * W::kBlockBytes;
        for (int e = 0; e < 256; ++e) codes[i][e] = W::code(blk, e);
        dw[i] = a.fp16[blk[W::kScaleOffset] | (blk[W::kScaleOffset + 1] << 8)];
      }
      for (int j = 0; j < C; ++j) {
        const std::int8_t* xq = a.xk->block_qs(c + j, b);
        const std::int16_t* bsums = a.xk->block_bsums(c + j, b);
        const float dx = a.xk->scale(c + j, b);
        for (int i = 0; i < R; ++i) {
          const float d = dx * dw[i];
          for (int l = 0; l < 8; ++l) {
            std::int32_t s = -bsums[2 * l] - bsums[2 * l + 1];
            for (int v = 0; v < 8; ++v)
              for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; ++e) s += codes[i][e] * xq[e];
            acc[i][j][l] = std::fma(static_cast<float>(s), d, acc[i][j][l]);
          }
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const float* v = acc[i][j];
        const float h0 = v[0] + v[4], h1 = v[1] + v[5], h2 = v[2] + v[6], h3 = v[3] + v[7];
        a.y[(c + j) * a.y_stride + r + i] = (h0 + h2) + (h1 + h3);
      }
  }
};

}  // namespace graft::quant
