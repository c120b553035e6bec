// Portable Q6_K kernel: the definition the SIMD kernels reproduce bit for bit (q6_k_gemm.hpp).
#include <cmath>
#include <cstring>

#include "families/kquants/q6_k_gemm.hpp"
#include "formats/q6_k/block_q6_k.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

struct Decoded {
  std::uint8_t u[kQK_K];
  int sc[16];
  float d;
};

void decode(const std::uint8_t* p, Decoded& out) {
  block_q6_k blk;
  std::memcpy(&blk, p, sizeof blk);
  out.d = f16_to_f32(blk.d);
  for (int j = 0; j < 16; ++j) out.sc[j] = blk.scales[j];
  unpack_q6_k_codes(blk, out.u);
}

struct ScalarQ6K {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    float acc[R][C][8] = {};
    Decoded w[R];
    for (std::int64_t b = 0; b < nb; ++b) {
      for (int i = 0; i < R; ++i) decode(a.w + (r + i) * a.w_stride + b * sizeof(block_q6_k), w[i]);
      for (int j = 0; j < C; ++j) {
        const std::int8_t* x = a.xk->block_qs(c + j, b);
        const std::int16_t* bs = a.xk->block_bsums(c + j, b);
        const float dx = a.xk->scale(c + j, b);
        for (int i = 0; i < R; ++i) {
          std::int32_t s[8] = {};
          for (int ch = 0; ch < 8; ++ch)
            for (int l = 0; l < 8; ++l) {
              std::int32_t p = 0;
              for (int e = 4 * l; e < 4 * l + 4; ++e) p += w[i].u[32 * ch + e] * x[32 * ch + e];
              s[l] += w[i].sc[2 * ch + (l >= 4)] * p;
            }
          for (int l = 0; l < 8; ++l) s[l] -= 32 * (w[i].sc[2 * l] * bs[2 * l] + w[i].sc[2 * l + 1] * bs[2 * l + 1]);
          const float d = dx * w[i].d;
          for (int l = 0; l < 8; ++l) acc[i][j][l] = std::fma(static_cast<float>(s[l]), d, acc[i][j][l]);
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const float* v = acc[i][j];
        a.y[(c + j) * a.y_stride + r + i] = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
      }
  }
};

}  // namespace

void q6_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarQ6K, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
