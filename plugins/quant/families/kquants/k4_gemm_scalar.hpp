// The portable Q4_K / Q5_K kernel (Bits = 4 or 5): the definition the SIMD kernels reproduce bit for
// bit (q4_k_gemm.hpp, q5_k_gemm.hpp). std::fma is the same correctly rounded operation as vfmadd.
#pragma once

#include <cmath>
#include <cstring>

#include "driver/gemm.hpp"
#include "families/kquants/k4_layout.hpp"
#include "half.hpp"

namespace graft::quant {

template <int Bits>
struct ScalarK4 {
  struct Decoded {
    std::uint8_t q[kQK_K];
    std::uint8_t sc[8], m[8];
    float d, dmin;
  };

  static void decode(const std::uint8_t* p, Decoded& out) {
    std::uint16_t h[2];
    std::memcpy(h, p, 4);
    out.d = f16_to_f32(h[0]);
    out.dmin = f16_to_f32(h[1]);
    unpack_scales_k4(p + 4, out.sc, out.m);
    const std::uint8_t* qs = p + K4Layout<Bits>::kQsOffset;
    for (int e = 0; e < kQK_K; ++e) {
      const std::uint8_t byte = qs[32 * (e / 64) + e % 32];
      int code = (e % 64) < 32 ? (byte & 0x0F) : (byte >> 4);
      if constexpr (Bits == 5) code |= ((p[K4Layout<Bits>::kQhOffset + e % 32] >> (e / 32)) & 1) << 4;
      out.q[e] = static_cast<std::uint8_t>(code);
    }
  }

  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    float acc[R][C][8] = {}, accm[R][C][4] = {};
    Decoded w[R];
    for (std::int64_t b = 0; b < nb; ++b) {
      for (int i = 0; i < R; ++i)
        decode(a.w + (r + i) * a.w_stride + b * static_cast<std::int64_t>(K4Layout<Bits>::kBlockBytes), w[i]);
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
          std::int32_t mm[4];
          for (int h = 0; h < 4; ++h)
            mm[h] = w[i].m[2 * h] * (bs[4 * h] + bs[4 * h + 1]) + w[i].m[2 * h + 1] * (bs[4 * h + 2] + bs[4 * h + 3]);
          if constexpr (Bits == 4) {
            for (int h = 0; h < 4; ++h) accm[i][j][h] = std::fma(static_cast<float>(mm[h]), dmin, accm[i][j][h]);
          } else {
            const std::int32_t total = mm[0] + mm[1] + mm[2] + mm[3];
            accm[i][j][0] = std::fma(static_cast<float>(total), dmin, accm[i][j][0]);
          }
        }
      }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) {
        const float* v = acc[i][j];
        const float* u = accm[i][j];
        const float h = ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7]));
        const float m = Bits == 4 ? (u[0] + u[2]) + (u[1] + u[3]) : u[0];
        a.y[(c + j) * a.y_stride + r + i] = h + m;
      }
  }
};

}  // namespace graft::quant
