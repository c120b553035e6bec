// The portable form of the Q1_0/Q2_0 kernels: bonsai_gemm.hpp's definition written out directly.
// The weight policy W supplies kSubPerBlock, kLanesPerSub, kBlockBytes and
// decode(block, codes) -> fp16 scale, filling kSubPerBlock * 32 signed codes.
#pragma once

#include <cmath>

#include "driver/gemm.hpp"
#include "families/bonsai/bonsai_gemm.hpp"
#include "half.hpp"

namespace graft::quant {

template <class W>
struct BonsaiScalarGemm {
  static constexpr int kG = W::kSubPerBlock, kParts = W::kLanesPerSub, kElems = kG * 32;

  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    float acc[R][C][bonsai::kLanes] = {};
    int codes[R][kElems];
    float dw[R];
    for (std::int64_t b = 0; b < a.k / kElems; ++b) {
      for (int i = 0; i < R; ++i)
        dw[i] = f16_to_f32(W::decode(a.w + (r + i) * a.w_stride + b * W::kBlockBytes, codes[i]));
      for (int sb = 0; sb < kG; ++sb) {
        const std::int64_t g = b * kG + sb;
        for (int j = 0; j < C; ++j) {
          const std::int8_t* xq = a.xq->block_qs(c + j, g);
          const float dx = a.xq->scales(c + j)[g];
          for (int i = 0; i < R; ++i) {
            const float s = dw[i] * dx;
            const int* cw = codes[i] + 32 * sb;
            for (int h = 0; h < kParts; ++h) {
              std::int32_t p = 0;
              for (int l = h; l < 8; l += kParts)  // part h: the groups of 4 with (e / 4) % kParts == h
                for (int e = 4 * l; e < 4 * l + 4; ++e) p += cw[e] * xq[e];
              float& lane = acc[i][j][bonsai::lane<kParts>(g, h)];
              lane = std::fma(static_cast<float>(p), s, lane);
            }
          }
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = bonsai::fold16(acc[i][j]);
  }
};

}  // namespace graft::quant
