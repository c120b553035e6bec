// Portable Q3_K kernel: the definition the SIMD kernels reproduce bit for bit (q3_k_gemm.hpp).
#include <cmath>
#include <cstring>

#include "families/kquants/q3_k_gemm.hpp"
#include "formats/q3_k/block_q3_k.hpp"

namespace graft::quant {

namespace {

struct ScalarQ3K {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    float acc[R][C][8] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      int codes[R][256], scales[R][16];
      float dw[R];
      for (int i = 0; i < R; ++i) {
        block_q3_k blk;
        std::memcpy(&blk, a.w + (r + i) * a.w_stride + b * sizeof(block_q3_k), sizeof blk);
        for (int e = 0; e < 256; ++e) codes[i][e] = q3k_code(blk, e);
        for (int j = 0; j < 16; ++j) scales[i][j] = q3k_scale(blk.scales, j) - 32;
        dw[i] = a.fp16[blk.d];
      }
      for (int j = 0; j < C; ++j) {
        const std::int8_t* xq = a.xk->block_qs(c + j, b);
        const float dx = a.xk->scale(c + j, b);
        for (int i = 0; i < R; ++i) {
          const float d = dx * dw[i];
          for (int l = 0; l < 8; ++l) {
            std::int32_t s = 0;
            for (int v = 0; v < 8; ++v) {
              std::int32_t p = 0;
              for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; ++e) p += codes[i][e] * xq[e];
              s += scales[i][2 * v + l / 4] * p;
            }
            acc[i][j][l] = std::fma(d, static_cast<float>(s), acc[i][j][l]);
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

}  // namespace

void q3_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarQ3K, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
