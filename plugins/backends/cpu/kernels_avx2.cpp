// AVX2 + FMA + F16C kernels. Every function here is compiled for those extensions through the
// target pragma below (and has internal linkage), so the plugin still loads and runs its scalar
// path on a CPU without them; avx2_kernels() itself is compiled for the baseline ISA.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "exp_poly.hpp"
#include "half.hpp"
#include "kernels.hpp"

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")
#endif

namespace graft::cpu {

namespace {

constexpr std::size_t W = 8;  // floats per register

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline double hsum(__m256d v) {
  __m128d s = _mm_add_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
  return _mm_cvtsd_f64(_mm_add_sd(s, _mm_unpackhi_pd(s, s)));
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Selects the first n < 8 lanes for maskload/maskstore (masked-off lanes load as zero).
inline __m256i tail_mask(std::size_t n) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), lanes);
}

inline __m256 exp_ps(__m256 x) {
  using namespace exp_poly;
  const __m256 hi = _mm256_set1_ps(kMaxArg), lo = _mm256_set1_ps(kMinNormalArg);
  const __m256 over = _mm256_cmp_ps(x, hi, _CMP_GT_OQ);
  const __m256 under = _mm256_cmp_ps(x, lo, _CMP_LT_OQ);
  // max/min return their second operand when one is NaN, so a NaN input stays NaN.
  const __m256 xc = _mm256_min_ps(hi, _mm256_max_ps(lo, x));
  __m256 n = _mm256_round_ps(_mm256_mul_ps(xc, _mm256_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  n = _mm256_min_ps(_mm256_set1_ps(127.0f), _mm256_max_ps(_mm256_set1_ps(-126.0f), n));
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), xc);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kP0);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP1));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP2));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP3));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP4));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kP5));
  p = _mm256_fmadd_ps(p, _mm256_mul_ps(r, r), r);
  p = _mm256_add_ps(p, _mm256_set1_ps(1.0f));
  const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  __m256 e = _mm256_mul_ps(p, _mm256_castsi256_ps(bits));
  e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), over);
  return _mm256_andnot_ps(under, e);
}

void rms_norm_row(const float* x, const float* w, float eps, float* y, std::size_t n) {
  const float mean = static_cast<float>(sum_of_squares(x, n) / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  const __m256 vs = _mm256_set1_ps(scale);
  std::size_t i = 0;
  for (; i + W <= n; i += W)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vs), _mm256_loadu_ps(w + i)));
  for (; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

void softmax_row(const float* x, float scale, float* y, std::size_t n) {
  const __m256 vscale = _mm256_set1_ps(scale);
  __m256 vmax = _mm256_set1_ps(-INFINITY);
  std::size_t i = 0;
  for (; i + W <= n; i += W) vmax = _mm256_max_ps(vmax, _mm256_mul_ps(_mm256_loadu_ps(x + i), vscale));
  float max = hmax(vmax);
  for (std::size_t j = i; j < n; ++j) max = std::fmax(max, x[j] * scale);

  const __m256 vm = _mm256_set1_ps(max);
  __m256d s0 = _mm256_setzero_pd(), s1 = s0;
  i = 0;
  for (; i + W <= n; i += W) {
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i), vscale), vm));
    _mm256_storeu_ps(y + i, e);
    s0 = _mm256_add_pd(s0, _mm256_cvtps_pd(_mm256_castps256_ps128(e)));
    s1 = _mm256_add_pd(s1, _mm256_cvtps_pd(_mm256_extractf128_ps(e, 1)));
  }
  double sum = hsum(_mm256_add_pd(s0, s1));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    const __m256 e = exp_ps(_mm256_sub_ps(_mm256_mul_ps(_mm256_maskload_ps(x + i, m), vscale), vm));
    _mm256_maskstore_ps(y + i, m, e);
    for (std::size_t j = i; j < n; ++j) sum += static_cast<double>(y[j]);
  }
  const float inv = static_cast<float>(1.0 / sum);
  const __m256 vinv = _mm256_set1_ps(inv);
  i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), vinv));
  for (; i < n; ++i) y[i] *= inv;
}

void add_row(const float* a, const float* b, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) y[i] = a[i] + b[i];
}

void mul_row(const float* a, const float* b, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) y[i] = a[i] * b[i];
}

inline __m256 silu_mul(__m256 g, __m256 u) {
  const __m256 e = exp_ps(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
  return _mm256_mul_ps(_mm256_div_ps(g, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), u);
}

void silu_mul_row(const float* gate, const float* up, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, silu_mul(_mm256_loadu_ps(gate + i), _mm256_loadu_ps(up + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, silu_mul(_mm256_maskload_ps(gate + i, m), _mm256_maskload_ps(up + i, m)));
  }
}

// Rotations use separate multiplies and adds (no FMA), so they give the scalar path's bits.
void rope_norm_row(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y) {
  const __m256i dup = _mm256_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3);
  std::size_t i = 0;
  for (; i + W / 2 <= n_pairs; i += W / 2) {
    const __m256 c = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(cos + i)), dup);
    const __m256 s = _mm256_permutevar8x32_ps(_mm256_castps128_ps256(_mm_loadu_ps(sin + i)), dup);
    const __m256 v = _mm256_loadu_ps(x + 2 * i);
    const __m256 swapped = _mm256_permute_ps(v, 0xB1);  // (x1, x0) in every pair
    // even lanes x0*c - x1*s, odd lanes x1*c + x0*s
    _mm256_storeu_ps(y + 2 * i, _mm256_addsub_ps(_mm256_mul_ps(v, c), _mm256_mul_ps(swapped, s)));
  }
  for (; i < n_pairs; ++i) {
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    y[2 * i] = x0 * cos[i] - x1 * sin[i];
    y[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
  }
}

void rope_neox_row(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y) {
  std::size_t i = 0;
  for (; i + W <= n_pairs; i += W) {
    const __m256 c = _mm256_loadu_ps(cos + i), s = _mm256_loadu_ps(sin + i);
    const __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + n_pairs);
    _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_mul_ps(x0, c), _mm256_mul_ps(x1, s)));
    _mm256_storeu_ps(y + i + n_pairs, _mm256_add_ps(_mm256_mul_ps(x0, s), _mm256_mul_ps(x1, c)));
  }
  for (; i < n_pairs; ++i) {
    const float x0 = x[i], x1 = x[i + n_pairs];
    y[i] = x0 * cos[i] - x1 * sin[i];
    y[i + n_pairs] = x0 * sin[i] + x1 * cos[i];
  }
}

void f16_row(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W)
    _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void bf16_row(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const __m256i wide = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i)));
    _mm256_storeu_ps(dst + i, _mm256_castsi256_ps(_mm256_slli_epi32(wide, 16)));
  }
  for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

// NC columns against one weight row. The per-column arithmetic does not depend on NC: two
// accumulators over 16-float steps, one 8-float step, a fixed horizontal sum, then the tail.
template <int NC>
inline void dot_block(const float* w, const float* x, std::size_t k, std::size_t xs, float* y, std::size_t ys) {
  __m256 a0[NC], a1[NC];
  for (int c = 0; c < NC; ++c) a0[c] = a1[c] = _mm256_setzero_ps();
  std::size_t i = 0;
  for (; i + 2 * W <= k; i += 2 * W) {
    const __m256 w0 = _mm256_loadu_ps(w + i), w1 = _mm256_loadu_ps(w + i + W);
    for (int c = 0; c < NC; ++c) {
      a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + c * xs + i), a0[c]);
      a1[c] = _mm256_fmadd_ps(w1, _mm256_loadu_ps(x + c * xs + i + W), a1[c]);
    }
  }
  if (i + W <= k) {
    const __m256 w0 = _mm256_loadu_ps(w + i);
    for (int c = 0; c < NC; ++c) a0[c] = _mm256_fmadd_ps(w0, _mm256_loadu_ps(x + c * xs + i), a0[c]);
    i += W;
  }
  for (int c = 0; c < NC; ++c) {
    float s = hsum(_mm256_add_ps(a0[c], a1[c]));
    for (std::size_t j = i; j < k; ++j) s += w[j] * x[c * xs + j];
    y[c * ys] = s;
  }
}

void dot_cols(const float* w, const float* x, std::size_t k, std::size_t x_stride, std::size_t n_cols,
              float* y, std::size_t y_stride) {
  std::size_t c = 0;
  for (; c + 4 <= n_cols; c += 4) dot_block<4>(w, x + c * x_stride, k, x_stride, y + c * y_stride, y_stride);
  for (; c < n_cols; ++c) dot_block<1>(w, x + c * x_stride, k, x_stride, y + c * y_stride, y_stride);
}

}  // namespace

}  // namespace graft::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace graft::cpu {

namespace {
constexpr Kernels kAvx2{
    SimdLevel::avx2, rms_norm_row,  softmax_row, add_row,  mul_row,  silu_mul_row,
    rope_norm_row,   rope_neox_row, f16_row,     bf16_row, dot_cols,
};
}  // namespace

const Kernels& avx2_kernels() noexcept { return kAvx2; }

}  // namespace graft::cpu

#endif  // x86
