// AVX2 dense kernel: two 8-lane accumulators per output hold lanes 0..7 and 8..15 of the defined
// 16-lane order; weights are widened with F16C (f16) or a 16-bit shift (bf16).
#include "families/dense/dense_gemm.hpp"

#ifdef __x86_64__
#include <algorithm>

#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

template <DenseType T>
GRAFT_TARGET_AVX2 static inline __m256 load8(const std::uint8_t* row, std::int64_t i) {
  if constexpr (T == DenseType::f32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else {
    const __m128i h = _mm_loadu_si128(reinterpret_cast<const __m128i*>(reinterpret_cast<const std::uint16_t*>(row) + i));
    if constexpr (T == DenseType::f16) return _mm256_cvtph_ps(h);
    else return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
  }
}

GRAFT_TARGET_AVX2 static inline float reduce(__m256 lo, __m256 hi) {
  const __m256 h = _mm256_add_ps(lo, hi);                                              // l + (l+8)
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));  // + 4 apart
  const __m128 t = _mm_add_ps(q, _mm_movehl_ps(q, q));                                 // + 2 apart
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));                        // + 1 apart
}

template <DenseType T>
struct Avx2 {
  template <int R, int C>
  GRAFT_TARGET_AVX2 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    const float* x[C];
    for (int j = 0; j < C; ++j) x[j] = a.xf + (c + j) * a.k;
    __m256 lo[R][C], hi[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) lo[i][j] = hi[i][j] = _mm256_setzero_ps();
    const std::int64_t full = a.k / 16 * 16;
    for (std::int64_t i0 = 0; i0 < full; i0 += 16) {
      __m256 wl[R], wh[R];
      for (int i = 0; i < R; ++i) {
        // Fetch the next tile's rows (contiguous after these) to keep misses in flight.
        _mm_prefetch(reinterpret_cast<const char*>(w[i] + R * a.w_stride + i0 * kElemBytes<T>), _MM_HINT_T0);
        wl[i] = load8<T>(w[i], i0);
        wh[i] = load8<T>(w[i], i0 + 8);
      }
      for (int j = 0; j < C; ++j) {
        const __m256 xl = _mm256_loadu_ps(x[j] + i0), xh = _mm256_loadu_ps(x[j] + i0 + 8);
        for (int i = 0; i < R; ++i) {
          lo[i][j] = _mm256_fmadd_ps(wl[i], xl, lo[i][j]);
          hi[i][j] = _mm256_fmadd_ps(wh[i], xh, hi[i][j]);
        }
      }
    }
    if (full < a.k) {  // zero-padded last chunk, widened through the scalar path (exact)
      const int len = static_cast<int>(a.k - full);
      alignas(32) float wt[R][16], xt[C][16];
      for (int i = 0; i < R; ++i)
        for (int l = 0; l < 16; ++l) wt[i][l] = l < len ? dense_weight<T>(w[i], full + l) : 0.0f;
      for (int j = 0; j < C; ++j)
        for (int l = 0; l < 16; ++l) xt[j][l] = l < len ? x[j][full + l] : 0.0f;
      for (int j = 0; j < C; ++j)
        for (int i = 0; i < R; ++i) {
          lo[i][j] = _mm256_fmadd_ps(_mm256_load_ps(wt[i]), _mm256_load_ps(xt[j]), lo[i][j]);
          hi[i][j] = _mm256_fmadd_ps(_mm256_load_ps(wt[i] + 8), _mm256_load_ps(xt[j] + 8), hi[i][j]);
        }
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = reduce(lo[i][j], hi[i][j]);
  }
};

template <DenseType T>
void gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Avx2<T>, 2, 2>(a, r0, r1, c0, c1);
}

}  // namespace

GemmFn dense_gemm_avx2(DenseType type) noexcept {
  switch (type) {
    case DenseType::f32: return &gemm<DenseType::f32>;
    case DenseType::f16: return &gemm<DenseType::f16>;
    case DenseType::bf16: return &gemm<DenseType::bf16>;
  }
  return nullptr;
}

}  // namespace graft::quant
#else
namespace graft::quant {
GemmFn dense_gemm_avx2(DenseType) noexcept { return nullptr; }
}  // namespace graft::quant
#endif
