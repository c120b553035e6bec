// Row kernels of the CPU backend, one table per instruction-set level. The ops (ops_*.cpp) check
// shapes and split rows across threads; a kernel only ever sees one row (or one weight row), so
// its result for a row cannot depend on how many rows a call has or on the thread count.
#pragma once

#include <cstddef>

#include "simd_level.hpp"

namespace graft::cpu {

// The sum of squares exactly as ggml's rms_norm forms it: float squares added in order into a
// double. Every level uses this order (an add chain: ~4 cycles per element), so rms_norm gives
// ggml's bits, and the same bits on every level.
inline double sum_of_squares(const float* x, std::size_t n) noexcept {
  double sum = 0.0;
  for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  return sum;
}

struct Kernels {
  SimdLevel level;
  // y = (x * (1 / sqrt(mean + eps))) * w, mean = (float)(sum_of_squares(x) / n) as ggml.
  void (*rms_norm_row)(const float* x, const float* w, float eps, float* y, std::size_t n);
  void (*add_row)(const float* a, const float* b, float* y, std::size_t n);
  // y = gate / (1 + exp(-gate)) * up
  void (*silu_mul_row)(const float* gate, const float* up, float* y, std::size_t n);
  // Adjacent pairs: (y[2i], y[2i+1]) = rotate((x[2i], x[2i+1]), cos[i], sin[i]), i < n_pairs.
  void (*rope_norm_row)(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y);
  // Split halves: (y[i], y[i+n_pairs]) = rotate((x[i], x[i+n_pairs]), cos[i], sin[i]).
  void (*rope_neox_row)(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y);
  // y = x / (1 + exp(-g))
  void (*sigmoid_mul_row)(const float* x, const float* g, float* y, std::size_t n);
  // One row of the gated delta rule for one head: s is the head's state, dv rows of dk floats
  // (row m holds S[., m]); dk a multiple of 16. Per row m, with the dot products in the defined
  // lane order below: s[m] *= decay; d = beta * (v[m] - dot(s[m], k)); s[m] += k * d (fused
  // multiply-adds); out[m] = dot(s[m], q) * scale; d_out[m] = d unless d_out is null. The dot
  // product is 16 lane sums of fused multiply-adds (lane l takes the elements i = l mod 16, in
  // order), then lanes l and l + 8, l and l + 4, l and l + 2, l and l + 1 added: every level gives
  // the same bits.
  void (*delta_rule_row)(float* s, const float* q, const float* k, const float* v, float decay, float beta,
                         float scale, float* out, float* d_out, std::size_t dk, std::size_t dv);
  // delta_rule_row's state update for n rows whose d is known (their d_out): for t = 0..n-1, per
  // row m of s: s[m] = fma(k[t], d[t][m], s[m] * decay[t]), the same bits; each s row is loaded
  // and stored once. k[t]: dk floats, d[t]: dv floats; dk a multiple of 16.
  void (*delta_apply_rows)(float* s, const float* const* k, const float* const* d, const float* decay, std::size_t n,
                           std::size_t dk, std::size_t dv);
};

// The lane order of delta_rule_row's dot products, for the scalar kernel and the tests.
inline float lane_dot16(const float* a, const float* b, std::size_t n) noexcept {
  float acc[16] = {};
  for (std::size_t i = 0; i < n; i += 16)
    for (std::size_t l = 0; l < 16; ++l) acc[l] = __builtin_fmaf(a[i + l], b[i + l], acc[l]);
  for (std::size_t w = 8; w >= 1; w /= 2)
    for (std::size_t l = 0; l < w; ++l) acc[l] += acc[l + w];
  return acc[0];
}

const Kernels& scalar_kernels() noexcept;
#if defined(__x86_64__) || defined(__i386__)
const Kernels& avx2_kernels() noexcept;
const Kernels& avx512_kernels() noexcept;
#endif
const Kernels& kernels_for(SimdLevel level) noexcept;

}  // namespace graft::cpu
