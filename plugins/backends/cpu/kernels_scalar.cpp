// Portable kernels: the reference the SIMD paths are tested against and the fallback on CPUs
// without AVX2. Their arithmetic mirrors ggml's scalar code (see docs/backends.md).
#include <cmath>
#include <cstring>

#include "kernels.hpp"

namespace graft::cpu {

namespace {

void rms_norm_row(const float* x, const float* w, float eps, float* y, std::size_t n) {
  const float mean = static_cast<float>(sum_of_squares(x, n) / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (std::size_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void add_row(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
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

void sigmoid_mul_row(const float* x, const float* g, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-g[i]));
}

void delta_rule_row(float* s, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                    float* out, float* d_out, std::size_t dk, std::size_t dv) {
  for (std::size_t m = 0; m < dv; ++m, s += dk) {
    for (std::size_t i = 0; i < dk; ++i) s[i] *= decay;
    const float d = beta * (v[m] - lane_dot16(s, k, dk));
    if (d_out) d_out[m] = d;
    for (std::size_t i = 0; i < dk; ++i) s[i] = __builtin_fmaf(k[i], d, s[i]);
    out[m] = lane_dot16(s, q, dk) * scale;
  }
}

void delta_apply_rows(float* s, const float* const* k, const float* const* d, const float* decay, std::size_t n,
                      std::size_t dk, std::size_t dv) {
  for (std::size_t m = 0; m < dv; ++m, s += dk)
    for (std::size_t i = 0; i < dk; ++i) {
      float x = s[i];
      for (std::size_t t = 0; t < n; ++t) x = __builtin_fmaf(k[t][i], d[t][m], x * decay[t]);
      s[i] = x;
    }
}

constexpr Kernels kScalar{SimdLevel::scalar, rms_norm_row, add_row, silu_mul_row, rope_norm_row, rope_neox_row,
                          sigmoid_mul_row, delta_rule_row, delta_apply_rows};

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
