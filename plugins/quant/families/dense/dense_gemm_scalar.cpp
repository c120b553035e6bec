// Portable dense kernel: the definition of the lane order the SIMD kernels reproduce.
#include <algorithm>
#include <cmath>

#include "families/dense/dense_gemm.hpp"

namespace graft::quant {

namespace {

template <DenseType T>
struct Scalar {
  template <int R, int C>
  static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    const float* x[C];
    for (int j = 0; j < C; ++j) x[j] = a.xf + (c + j) * a.k;
    float acc[R][C][16] = {};
    for (std::int64_t i0 = 0; i0 < a.k; i0 += 16) {
      const int len = static_cast<int>(std::min<std::int64_t>(16, a.k - i0));
      float wv[R][16], xv[C][16];
      // Whole chunks widen in a loop without the padding test, which vectorizes (the f16 widening
      // is branch-free).
      for (int i = 0; i < R; ++i)
        if (len == 16)
          for (int l = 0; l < 16; ++l) wv[i][l] = dense_weight<T>(w[i], i0 + l);
        else
          for (int l = 0; l < 16; ++l) wv[i][l] = l < len ? dense_weight<T>(w[i], i0 + l) : 0.0f;
      for (int j = 0; j < C; ++j)
        for (int l = 0; l < 16; ++l) xv[j][l] = l < len ? x[j][i0 + l] : 0.0f;
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j)
          for (int l = 0; l < 16; ++l) acc[i][j][l] = std::fma(wv[i][l], xv[j][l], acc[i][j][l]);
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = reduce_lanes16(acc[i][j]);
  }
};

template <DenseType T>
void gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Scalar<T>, 4, 2>(a, r0, r1, c0, c1);
}

}  // namespace

GemmFn dense_gemm_scalar(DenseType type) noexcept {
  switch (type) {
    case DenseType::f32: return &gemm<DenseType::f32>;
    case DenseType::f16: return &gemm<DenseType::f16>;
    case DenseType::bf16: return &gemm<DenseType::bf16>;
  }
  return nullptr;
}

}  // namespace graft::quant
