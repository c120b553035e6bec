// Portable Q8_0 kernel: the definition the SIMD kernels reproduce bit for bit.
#include "blocks.hpp"
#include "half.hpp"
#include "q8_0_gemm.hpp"

namespace graft::quant {

namespace {

struct Scalar {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK;
    const BlockQ8_0* w[R];
    for (int i = 0; i < R; ++i) w[i] = reinterpret_cast<const BlockQ8_0*>(a.w + (r + i) * a.w_stride);
    float acc[R][C] = {};
    for (std::int64_t b = 0; b < nb; ++b) {
      for (int j = 0; j < C; ++j) {
        const std::int8_t* xq = a.xq->block_qs(c + j, b);
        const float dx = a.xq->scales(c + j)[b];
        for (int i = 0; i < R; ++i) {
          std::int32_t isum = 0;
          for (int e = 0; e < kQK; ++e) isum += w[i][b].qs[e] * xq[e];
          const float s = fp16_to_fp32(w[i][b].d) * dx;
          acc[i][j] = acc[i][j] + s * static_cast<float>(isum);
        }
      }
    }
    for (int j = 0; j < C; ++j)
      for (int i = 0; i < R; ++i) a.y[(c + j) * a.y_stride + r + i] = acc[i][j];
  }
};

}  // namespace

void q8_0_gemm_scalar(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Scalar, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
