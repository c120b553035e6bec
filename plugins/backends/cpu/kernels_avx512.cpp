// AVX-512F kernels (16 floats per register, masked tails). Same structure and rules as
// kernels_avx2.cpp: compiled for the extension by the target pragma, internal linkage, and the
// table accessor compiled for the baseline ISA.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <cmath>
#include <cstdint>
#include <cstring>

#include "exp_poly.hpp"
#include "half.hpp"
#include "kernels.hpp"

#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ < 13
// GCC 12's avx512fintrin.h trips -W(maybe-)uninitialized on its own _mm512_undefined_* (GCC bug 105593).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#if defined(__clang__)
#pragma clang attribute push(__attribute__((target("avx512f,avx2,fma,f16c"))), apply_to = function)
#else
#pragma GCC push_options
#pragma GCC target("avx512f,avx2,fma,f16c")
#endif

namespace graft::cpu {

namespace {

constexpr std::size_t W = 16;  // floats per register

inline __mmask16 tail_mask(std::size_t n) { return static_cast<__mmask16>((1u << n) - 1u); }

inline __m512d lo_pd(__m512 v) { return _mm512_cvtps_pd(_mm512_castps512_ps256(v)); }
inline __m512d hi_pd(__m512 v) {
  return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));
}

// exp with scalef: the 2^n scaling under- and overflows gradually and correctly, so only the
// argument needs clamping (far enough out that the result is already 0 or inf).
inline __m512 exp_ps(__m512 x) {
  using namespace exp_poly;
  // max/min return their second operand when one is NaN, so a NaN input stays NaN.
  const __m512 xc = _mm512_min_ps(_mm512_set1_ps(89.0f), _mm512_max_ps(_mm512_set1_ps(-104.0f), x));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kP0);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP1));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP2));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP3));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP4));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kP5));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r);
  p = _mm512_add_ps(p, _mm512_set1_ps(1.0f));
  return _mm512_scalef_ps(p, n);
}

void rms_norm_row(const float* x, const float* w, float eps, float* y, std::size_t n) {
  const float mean = static_cast<float>(sum_of_squares(x, n) / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  const __m512 vs = _mm512_set1_ps(scale);
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 v = _mm512_mul_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vs), _mm512_maskz_loadu_ps(m, w + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

void softmax_row(const float* x, float scale, float* y, std::size_t n) {
  const __m512 vscale = _mm512_set1_ps(scale);
  __m512 vmax = _mm512_set1_ps(-INFINITY);
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    vmax = _mm512_mask_max_ps(vmax, m, vmax, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vscale));
  }
  const __m512 vm = _mm512_set1_ps(_mm512_reduce_max_ps(vmax));
  __m512d s0 = _mm512_setzero_pd(), s1 = s0;
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 e = _mm512_maskz_mov_ps(m, exp_ps(_mm512_sub_ps(_mm512_mul_ps(_mm512_maskz_loadu_ps(m, x + i), vscale), vm)));
    _mm512_mask_storeu_ps(y + i, m, e);
    s0 = _mm512_add_pd(s0, lo_pd(e));
    s1 = _mm512_add_pd(s1, hi_pd(e));
  }
  const double sum = _mm512_reduce_add_pd(_mm512_add_pd(s0, s1));
  const __m512 vinv = _mm512_set1_ps(static_cast<float>(1.0 / sum));
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, y + i), vinv));
  }
}

void add_row(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void mul_row(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_mul_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
  }
}

void silu_mul_row(const float* gate, const float* up, float* y, std::size_t n) {
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 g = _mm512_maskz_loadu_ps(m, gate + i);
    const __m512 e = exp_ps(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(g), sign)));
    const __m512 v = _mm512_mul_ps(_mm512_div_ps(g, _mm512_add_ps(_mm512_set1_ps(1.0f), e)), _mm512_maskz_loadu_ps(m, up + i));
    _mm512_mask_storeu_ps(y + i, m, v);
  }
}

// Rotations use separate multiplies and adds (no FMA), so they give the scalar path's bits.
void rope_norm_row(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y) {
  const __m512i dup = _mm512_setr_epi32(0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7);
  std::size_t i = 0;
  for (; i + W / 2 <= n_pairs; i += W / 2) {
    const __m512 c = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(cos + i)));
    const __m512 s = _mm512_permutexvar_ps(dup, _mm512_castps256_ps512(_mm256_loadu_ps(sin + i)));
    const __m512 v = _mm512_loadu_ps(x + 2 * i);
    const __m512 a = _mm512_mul_ps(v, c);
    const __m512 b = _mm512_mul_ps(_mm512_permute_ps(v, 0xB1), s);  // (x1, x0) * s in every pair
    // even lanes x0*c - x1*s, odd lanes x1*c + x0*s
    _mm512_storeu_ps(y + 2 * i, _mm512_mask_sub_ps(_mm512_add_ps(a, b), 0x5555, a, b));
  }
  for (; i < n_pairs; ++i) {
    const float x0 = x[2 * i], x1 = x[2 * i + 1];
    y[2 * i] = x0 * cos[i] - x1 * sin[i];
    y[2 * i + 1] = x0 * sin[i] + x1 * cos[i];
  }
}

void rope_neox_row(const float* x, const float* cos, const float* sin, std::size_t n_pairs, float* y) {
  for (std::size_t i = 0; i < n_pairs; i += W) {
    const __mmask16 m = n_pairs - i >= W ? __mmask16(0xffff) : tail_mask(n_pairs - i);
    const __m512 c = _mm512_maskz_loadu_ps(m, cos + i), s = _mm512_maskz_loadu_ps(m, sin + i);
    const __m512 x0 = _mm512_maskz_loadu_ps(m, x + i), x1 = _mm512_maskz_loadu_ps(m, x + i + n_pairs);
    _mm512_mask_storeu_ps(y + i, m, _mm512_sub_ps(_mm512_mul_ps(x0, c), _mm512_mul_ps(x1, s)));
    _mm512_mask_storeu_ps(y + i + n_pairs, m, _mm512_add_ps(_mm512_mul_ps(x0, s), _mm512_mul_ps(x1, c)));
  }
}

void f16_row(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W)
    _mm512_storeu_ps(dst + i, _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i))));
  for (; i < n; ++i) dst[i] = f16_to_f32(src[i]);
}

void bf16_row(const std::uint16_t* src, float* dst, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) {
    const __m512i wide = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + i)));
    _mm512_storeu_ps(dst + i, _mm512_castsi512_ps(_mm512_slli_epi32(wide, 16)));
  }
  for (; i < n; ++i) dst[i] = bf16_to_f32(src[i]);
}

// NC columns against one weight row. The per-column arithmetic does not depend on NC: two
// accumulators over 32-float steps, masked 16-float steps for the rest, a fixed reduction.
template <int NC>
inline void dot_block(const float* w, const float* x, std::size_t k, std::size_t xs, float* y, std::size_t ys) {
  __m512 a0[NC], a1[NC];
  for (int c = 0; c < NC; ++c) a0[c] = a1[c] = _mm512_setzero_ps();
  std::size_t i = 0;
  for (; i + 2 * W <= k; i += 2 * W) {
    const __m512 w0 = _mm512_loadu_ps(w + i), w1 = _mm512_loadu_ps(w + i + W);
    for (int c = 0; c < NC; ++c) {
      a0[c] = _mm512_fmadd_ps(w0, _mm512_loadu_ps(x + c * xs + i), a0[c]);
      a1[c] = _mm512_fmadd_ps(w1, _mm512_loadu_ps(x + c * xs + i + W), a1[c]);
    }
  }
  for (; i < k; i += W) {  // masked-off lanes multiply zeros
    const __mmask16 m = k - i >= W ? __mmask16(0xffff) : tail_mask(k - i);
    const __m512 w0 = _mm512_maskz_loadu_ps(m, w + i);
    for (int c = 0; c < NC; ++c) a0[c] = _mm512_fmadd_ps(w0, _mm512_maskz_loadu_ps(m, x + c * xs + i), a0[c]);
  }
  for (int c = 0; c < NC; ++c) y[c * ys] = _mm512_reduce_add_ps(_mm512_add_ps(a0[c], a1[c]));
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
constexpr Kernels kAvx512{
    SimdLevel::avx512, rms_norm_row,  softmax_row, add_row,  mul_row,  silu_mul_row,
    rope_norm_row,     rope_neox_row, f16_row,     bf16_row, dot_cols,
};
}  // namespace

const Kernels& avx512_kernels() noexcept { return kAvx512; }

}  // namespace graft::cpu

#endif  // x86
