// AVX-512F kernels (16 floats per register, masked tails). Same structure and rules as
// kernels_avx2.cpp: compiled for the extension by the target pragma, internal linkage, and the
// table accessor compiled for the baseline ISA.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "exp_poly.hpp"
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

void add_row(const float* a, const float* b, float* y, std::size_t n) {
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    _mm512_mask_storeu_ps(y + i, m, _mm512_add_ps(_mm512_maskz_loadu_ps(m, a + i), _mm512_maskz_loadu_ps(m, b + i)));
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

void sigmoid_mul_row(const float* x, const float* g, float* y, std::size_t n) {
  const __m512i sign = _mm512_set1_epi32(static_cast<int>(0x80000000u));
  for (std::size_t i = 0; i < n; i += W) {
    const __mmask16 m = n - i >= W ? __mmask16(0xffff) : tail_mask(n - i);
    const __m512 e = exp_ps(_mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_maskz_loadu_ps(m, g + i)), sign)));
    _mm512_mask_storeu_ps(y + i, m, _mm512_div_ps(_mm512_maskz_loadu_ps(m, x + i), _mm512_add_ps(_mm512_set1_ps(1.0f), e)));
  }
}

// The defined dot-product order's final additions: lanes l + (l+8), then 4, 2 and 1 apart.
inline float reduce16(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1)));  // avx512f only
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  const __m128 t = _mm_add_ps(q, _mm_movehl_ps(q, q));
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));
}

void delta_rule_row(float* s, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                    float* out, float* d_out, std::size_t dk, std::size_t dv) {
  const __m512 vdecay = _mm512_set1_ps(decay);
  for (std::size_t m = 0; m < dv; ++m, s += dk) {
    __m512 acc = _mm512_setzero_ps();
    for (std::size_t i = 0; i < dk; i += W) {
      const __m512 si = _mm512_mul_ps(_mm512_loadu_ps(s + i), vdecay);
      _mm512_storeu_ps(s + i, si);
      acc = _mm512_fmadd_ps(si, _mm512_loadu_ps(k + i), acc);
    }
    const float dm = beta * (v[m] - reduce16(acc));
    if (d_out) d_out[m] = dm;
    const __m512 d = _mm512_set1_ps(dm);
    acc = _mm512_setzero_ps();
    for (std::size_t i = 0; i < dk; i += W) {
      const __m512 si = _mm512_fmadd_ps(_mm512_loadu_ps(k + i), d, _mm512_loadu_ps(s + i));
      _mm512_storeu_ps(s + i, si);
      acc = _mm512_fmadd_ps(si, _mm512_loadu_ps(q + i), acc);
    }
    out[m] = reduce16(acc) * scale;
  }
}

// Floats [i, i + 16 P) of state rows m .. m + R - 1 (at s, dk apart) in R * P registers through
// every row t: independent chains of multiply then fused multiply-add keep both FMA ports busy
// through their latency, and each load of k serves R state rows.
template <std::size_t R, std::size_t P>
inline void delta_apply_part(float* s, const float* const* k, const float* const* d, const float* decay, std::size_t n,
                             std::size_t m, std::size_t i, std::size_t dk) {
  __m512 r[R][P];
  for (std::size_t a = 0; a < R; ++a)
    for (std::size_t p = 0; p < P; ++p) r[a][p] = _mm512_loadu_ps(s + a * dk + i + p * W);
  for (std::size_t t = 0; t < n; ++t) {
    const __m512 at = _mm512_set1_ps(decay[t]);
    __m512 dt[R];
    for (std::size_t a = 0; a < R; ++a) dt[a] = _mm512_set1_ps(d[t][m + a]);
    const float* kt = k[t] + i;
    for (std::size_t p = 0; p < P; ++p) {
      const __m512 kp = _mm512_loadu_ps(kt + p * W);
      for (std::size_t a = 0; a < R; ++a) r[a][p] = _mm512_fmadd_ps(kp, dt[a], _mm512_mul_ps(r[a][p], at));
    }
  }
  for (std::size_t a = 0; a < R; ++a)
    for (std::size_t p = 0; p < P; ++p) _mm512_storeu_ps(s + a * dk + i + p * W, r[a][p]);
}

template <std::size_t R>
inline void delta_apply_rows_of(float* s, const float* const* k, const float* const* d, const float* decay,
                                std::size_t n, std::size_t m, std::size_t dk) {
  for (std::size_t i = 0; i < dk; i += 8 * W) switch (std::min<std::size_t>(8, (dk - i) / W)) {  // dk: 16 | dk
      case 8: delta_apply_part<R, 8>(s, k, d, decay, n, m, i, dk); break;
      case 7: delta_apply_part<R, 7>(s, k, d, decay, n, m, i, dk); break;
      case 6: delta_apply_part<R, 6>(s, k, d, decay, n, m, i, dk); break;
      case 5: delta_apply_part<R, 5>(s, k, d, decay, n, m, i, dk); break;
      case 4: delta_apply_part<R, 4>(s, k, d, decay, n, m, i, dk); break;
      case 3: delta_apply_part<R, 3>(s, k, d, decay, n, m, i, dk); break;
      case 2: delta_apply_part<R, 2>(s, k, d, decay, n, m, i, dk); break;
      default: delta_apply_part<R, 1>(s, k, d, decay, n, m, i, dk); break;
    }
}

void delta_apply_rows(float* s, const float* const* k, const float* const* d, const float* decay, std::size_t n,
                      std::size_t dk, std::size_t dv) {
  // Two state rows at a time (up to 16 registers of state), then the odd one.
  std::size_t m = 0;
  for (; m + 2 <= dv; m += 2, s += 2 * dk) delta_apply_rows_of<2>(s, k, d, decay, n, m, dk);
  if (m < dv) delta_apply_rows_of<1>(s, k, d, decay, n, m, dk);
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

}  // namespace

}  // namespace graft::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace graft::cpu {

namespace {
constexpr Kernels kAvx512{SimdLevel::avx512, rms_norm_row, add_row, silu_mul_row, rope_norm_row, rope_neox_row,
                            sigmoid_mul_row, delta_rule_row, delta_apply_rows};
}  // namespace

const Kernels& avx512_kernels() noexcept { return kAvx512; }

}  // namespace graft::cpu

#endif  // x86
