// Portable kernels: the reference the SIMD paths are tested against and the fallback on CPUs
// without AVX2. Their arithmetic mirrors ggml's scalar code (see docs/backends.md).
#include <cmath>
#include <cstring>
#include <limits>

#include "half.hpp"
#include "kernels.hpp"

namespace graft::cpu {

namespace {

void rms_norm_row(const float* x, const float* w, float eps, float* y, std::size_t n) {
  const float mean = static_cast<float>(sum_of_squares(x, n) / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (std::size_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void softmax_row(const float* x, float scale, float* y, std::size_t n) {
  float max = -std::numeric_limits<float>::infinity();
  for (std::size_t i = 0; i < n; ++i) max = std::fmax(max, x[i] * scale);
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] * scale - max);
    sum += static_cast<double>(e);
    y[i] = e;
  }
  const float inv = static_cast<float>(1.0 / sum);
  for (std::size_t i = 0; i < n; ++i) y[i] *= inv;
}

void add_row(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul_row(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void silu_mul_row(const float* gate, const float* up, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) {
    const float g = gate[i];
    y[i] = g / (1.0f + std::exp(-g)) * up[i];
  }
}

void rope_norm_row(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y) {
  for (std::size_t i = 0; i < n_pairs; ++i) {
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    y[2 * i] = x0 * cos[i] - x1 * sin[i];
    y[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
  }
}

void rope_neox_row(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y) {
  for (std::size_t i = 0; i < n_pairs; ++i) {
    const float x0 = x[i], x1 = x[i + n_pairs];
    y[i] = x0 * cos[i] - x1 * sin[i];
    y[i + n_pairs] = x0 * sin[i] + x1 * cos[i];
  }
}

void f16_row(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void bf16_row(const std::uint16_t* src, float* dst, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

// Eight interleaved partial sums (so the compiler can use SSE without reassociating), combined
// pairwise, then the tail in order.
float dot(const float* w, const float* x, std::size_t k) {
  float acc[8] = {};
  std::size_t i = 0;
  for (; i + 8 <= k; i += 8)
    for (int j = 0; j < 8; ++j) acc[j] += w[i + j] * x[i + j];
  float s = ((acc[0] + acc[1]) + (acc[2] + acc[3])) + ((acc[4] + acc[5]) + (acc[6] + acc[7]));
  for (; i < k; ++i) s += w[i] * x[i];
  return s;
}

void dot_cols(const float* w, const float* x, std::size_t k, std::size_t x_stride, std::size_t n_cols,
              float* y, std::size_t y_stride) {
  for (std::size_t c = 0; c < n_cols; ++c) y[c * y_stride] = dot(w, x + c * x_stride, k);
}

constexpr Kernels kScalar{
    SimdLevel::scalar, rms_norm_row,  softmax_row, add_row,  mul_row,  silu_mul_row,
    rope_norm_row,     rope_neox_row, f16_row,     bf16_row, dot_cols,
};

}  // namespace

const Kernels& scalar_kernels() noexcept { return kScalar; }

const Kernels& kernels_for(SimdLevel level) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (level == SimdLevel::avx512) return avx512_kernels();
  if (level == SimdLevel::avx2) return avx2_kernels();
#else
  (void)level;
#endif
  return kScalar;
}

}  // namespace graft::cpu
