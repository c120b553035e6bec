// AVX2 + FMA + F16C kernels. Every function here is compiled for those extensions through the
// target pragma below (and has internal linkage), so the plugin still loads and runs its scalar
// path on a CPU without them; avx2_kernels() itself is compiled for the baseline ISA.
#if defined(__x86_64__) || defined(__i386__)

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "exp_poly.hpp"
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

void add_row(const float* a, const float* b, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, _mm256_add_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i)));
  for (; i < n; ++i) y[i] = a[i] + b[i];
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

inline __m256 sigmoid_mul(__m256 x, __m256 g) {
  const __m256 e = exp_ps(_mm256_xor_ps(g, _mm256_set1_ps(-0.0f)));
  return _mm256_div_ps(x, _mm256_add_ps(_mm256_set1_ps(1.0f), e));
}

void sigmoid_mul_row(const float* x, const float* g, float* y, std::size_t n) {
  std::size_t i = 0;
  for (; i + W <= n; i += W) _mm256_storeu_ps(y + i, sigmoid_mul(_mm256_loadu_ps(x + i), _mm256_loadu_ps(g + i)));
  if (i < n) {
    const __m256i m = tail_mask(n - i);
    _mm256_maskstore_ps(y + i, m, sigmoid_mul(_mm256_maskload_ps(x + i, m), _mm256_maskload_ps(g + i, m)));
  }
}

// The 16 lanes of the defined dot-product order as two 8-float registers: lanes 0-7 and 8-15.
inline float reduce16(__m256 lo, __m256 hi) {
  const __m256 h = _mm256_add_ps(lo, hi);                                                  // l + (l+8)
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));   // + 4 apart
  const __m128 t = _mm_add_ps(q, _mm_movehl_ps(q, q));                                   // + 2 apart
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));                          // + 1 apart
}

void delta_rule_row(float* s, const float* q, const float* k, const float* v, float decay, float beta, float scale,
                    float* out, float* d_out, std::size_t dk, std::size_t dv) {
  const __m256 vdecay = _mm256_set1_ps(decay);
  for (std::size_t m = 0; m < dv; ++m, s += dk) {
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (std::size_t i = 0; i < dk; i += 16) {
      const __m256 s0 = _mm256_mul_ps(_mm256_loadu_ps(s + i), vdecay);
      const __m256 s1 = _mm256_mul_ps(_mm256_loadu_ps(s + i + 8), vdecay);
      _mm256_storeu_ps(s + i, s0);
      _mm256_storeu_ps(s + i + 8, s1);
      lo = _mm256_fmadd_ps(s0, _mm256_loadu_ps(k + i), lo);
      hi = _mm256_fmadd_ps(s1, _mm256_loadu_ps(k + i + 8), hi);
    }
    const float dm = beta * (v[m] - reduce16(lo, hi));
    if (d_out) d_out[m] = dm;
    const __m256 d = _mm256_set1_ps(dm);
    lo = hi = _mm256_setzero_ps();
    for (std::size_t i = 0; i < dk; i += 16) {
      const __m256 s0 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i), d, _mm256_loadu_ps(s + i));
      const __m256 s1 = _mm256_fmadd_ps(_mm256_loadu_ps(k + i + 8), d, _mm256_loadu_ps(s + i + 8));
      _mm256_storeu_ps(s + i, s0);
      _mm256_storeu_ps(s + i + 8, s1);
      lo = _mm256_fmadd_ps(s0, _mm256_loadu_ps(q + i), lo);
      hi = _mm256_fmadd_ps(s1, _mm256_loadu_ps(q + i + 8), hi);
    }
    out[m] = reduce16(lo, hi) * scale;
  }
}

// Floats [i, i + 8 P) of state row m (at s) in P registers through every row t.
template <std::size_t P>
inline void delta_apply_part(float* s, const float* const* k, const float* const* d, const float* decay, std::size_t n,
                             std::size_t m, std::size_t i) {
  __m256 r[P];
  for (std::size_t p = 0; p < P; ++p) r[p] = _mm256_loadu_ps(s + i + p * 8);
  for (std::size_t t = 0; t < n; ++t) {
    const __m256 dt = _mm256_set1_ps(d[t][m]), at = _mm256_set1_ps(decay[t]);
    const float* kt = k[t] + i;
    for (std::size_t p = 0; p < P; ++p) r[p] = _mm256_fmadd_ps(_mm256_loadu_ps(kt + p * 8), dt, _mm256_mul_ps(r[p], at));
  }
  for (std::size_t p = 0; p < P; ++p) _mm256_storeu_ps(s + i + p * 8, r[p]);
}

void delta_apply_rows(float* s, const float* const* k, const float* const* d, const float* decay, std::size_t n,
                      std::size_t dk, std::size_t dv) {
  // 64 floats (8 registers, independent chains) of a state row at a time; dk is a multiple of 16.
  for (std::size_t m = 0; m < dv; ++m, s += dk)
    for (std::size_t i = 0; i < dk; i += 64) switch (std::min<std::size_t>(8, (dk - i) / 8)) {
        case 8: delta_apply_part<8>(s, k, d, decay, n, m, i); break;
        case 6: delta_apply_part<6>(s, k, d, decay, n, m, i); break;
        case 4: delta_apply_part<4>(s, k, d, decay, n, m, i); break;
        default: delta_apply_part<2>(s, k, d, decay, n, m, i); break;
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

}  // namespace

}  // namespace graft::cpu

#if defined(__clang__)
#pragma clang attribute pop
#else
#pragma GCC pop_options
#endif

namespace graft::cpu {

namespace {
constexpr Kernels kAvx2{SimdLevel::avx2, rms_norm_row, add_row, silu_mul_row, rope_norm_row, rope_neox_row,
                        sigmoid_mul_row, delta_rule_row, delta_apply_rows};
}  // namespace

const Kernels& avx2_kernels() noexcept { return kAvx2; }

}  // namespace graft::cpu

#endif  // x86
