// Portable Q4_K kernel: the definition the SIMD kernels reproduce bit for bit (q4_k_gemm.hpp).
#include <cmath>
#include <cstring>

#include "half.hpp"
#include "q4_k_block.hpp"
#include "q4_k_gemm.hpp"

namespace graft::quant {

namespace {

struct Decoded {
  std::uint8_t q[kQK_K];
  std::uint8_t sc[8], m[8];
  float d, dmin;
};

void decode(const std::uint8_t* p, Decoded& out) {
  BlockQ4_K blk;
  std::memcpy(&blk, p, sizeof blk);
  out.d = fp16_to_fp32(blk.d);
  out.dmin = fp16_to_fp32(blk.dmin);
  unpack_scales_k4(blk.scales, out.sc, out.m);
  for (int j = 0; j < 4; ++j)
    for (int l = 0; l < 32; ++l) {
      out.q[64 * j + l] = blk.qs[32 * j + l] & 0x0F;
      out.q[64 * j + 32 + l] = blk.qs[32 * j + l] >> 4;
    }
}

struct ScalarQ4K {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    float acc[R][C][8] = {}, accm[R][C][4] = {};
    Decoded w[R];
    for (std::int64_t b = 0; b < nb; ++b) {
      for (int i = 0; i < R; ++i) decode(a.w + (r + i) * a.w_stride + b * sizeof(BlockQ4_K), w[i]);
      for (int j = 0; j < C; ++j) {
        const std::int8_t* x = a.xk->block_qs(c + j, b);
        const std::int16_t* bs = a.xk->block_bsums(c + j, b);
        const float dx = a.xk->scale(c + j, b);
        for (int i = 0; i < R; ++i) {
          std::int32_t s[8] = {};
          for (int sb = 0; sb < 8; ++sb)
            for (int l = 0; l < 8; ++l) {
              std::int32_t p = 0;
              for (int e = 4 * l; e < 4 * l + 4; ++e) p += w[i].q[32 * sb + e] * x[32 * sb + e];
              s[l] += w[i].sc[sb] * p;
            }
          const float d = dx * w[i].d, dmin = -(dx * w[i].dmin);
          for (int l = 0; l < 8; ++l) acc[i][j][l] = std::fma(static_cast<float>(s[l]), d, acc[i][j][l]);
          for (int h = 0; h < 4; ++h) {
            const std::int32_t mm = w[i].m[2 * h] * (bs[4 * h] + bs[4 * h + 1]) +
                                    w[i].m[2 * h + 1] * (bs[4 * h + 2] + bs[4 * h + 3]);
            accm[i][j][h] = std::fma(static_cast<float>(mm), dmin, accm[i][j][h]);
          }
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const float* v = acc[i][j];
        const float* u = accm[i][j];
        const float h = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
        a.y[(c + j) * a.y_stride + r + i] = h + ((u[0] + u[2]) + (u[1] + u[3]));
      }
  }
};

}  // namespace

void q4_k_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<ScalarQ4K, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
