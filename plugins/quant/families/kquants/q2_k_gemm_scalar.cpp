// Portable Q2_K kernel: the definition the SIMD kernels reproduce bit for bit (q2_k_gemm.hpp).
#include <cmath>
#include <cstring>

#include "families/kquants/q2_k_gemm.hpp"
#include "formats/q2_k/block_q2_k.hpp"

namespace graft::quant {

namespace {

struct ScalarQ2K {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    float acc[R][C][8] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      std::uint8_t codes[R][256];
      block_q2_k blk[R];
      for (int i = 0; i < R; ++i) {
        std::memcpy(&blk[i], a.w + (r + i) * a.w_stride + b * sizeof(block_q2_k), sizeof(block_q2_k));
        for (int e = 0; e < 256; ++e) codes[i][e] = static_cast<std::uint8_t>(q2k_code(blk[i], e));
      }
      for (int j = 0; j < C; ++j) {
        const std::int8_t* xq = a.xk->block_qs(c + j, b);
        const std::int16_t* bsums = a.xk->block_bsums(c + j, b);
        const float dx = a.xk->scale(c + j, b);
        for (int i = 0; i < R; ++i) {
          const float dmin = -dx * a.fp16[blk[i].dmin];
          const float d = dx * a.fp16[blk[i].d];
          for (int l = 0; l < 8; ++l) {
            std::int32_t m = 0, s = 0;
            for (int t = 2 * l; t < 2 * l + 2; ++t) m += (blk[i].scales[t] >> 4) * bsums[t];
            for (int v = 0; v < 8; ++v) {
              std::int32_t p = 0;
              for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; ++e) p += codes[i][e] * xq[e];
              s += (blk[i].scales[2 * v + l / 4] & 15) * p;
            }
            acc[i][j][l] = std::fma(dmin, static_cast<float>(m), acc[i][j][l]);
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

void q2_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarQ2K, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
