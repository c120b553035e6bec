// AVX-512 dense kernel: one 16-lane accumulator per output is exactly the defined lane order.
#include "families/dense/dense_gemm.hpp"

#ifdef __x86_64__
#include <algorithm>

#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

template <DenseType T>
GRAFT_TARGET_AVX512 static inline __m512 load16(const std::uint8_t* row, std::int64_t i) {
  if constexpr (T == DenseType::f32) {
    return _mm512_loadu_ps(reinterpret_cast<const float*>(row) + i);
  } else {
    const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(reinterpret_cast<const std::uint16_t*>(row) + i));
    if constexpr (T == DenseType::f16) return _mm512_cvtph_ps(h);
    else return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
  }
}

GRAFT_TARGET_AVX512 static inline float reduce(__m512 v) {
  const __m256 upper = x86::high_half(v);
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), upper);                        // l + (l+8)
  const __m128 q = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));        // + 4 apart
  const __m128 t = _mm_add_ps(q, _mm_movehl_ps(q, q));                                       // + 2 apart
  return _mm_cvtss_f32(_mm_add_ss(t, _mm_shuffle_ps(t, t, 1)));                              // + 1 apart
}

template <DenseType T>
struct Avx512 {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::uint8_t* w[R];
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    const float* x[C];
    for (int j = 0; j < C; ++j) x[j] = a.xf + (c + j) * a.k;
    __m512 acc[R][C];
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) acc[i][j] = _mm512_setzero_ps();
    const std::int64_t full = a.k / 16 * 16;
    for (std::int64_t i0 = 0; i0 < full; i0 += 16) {
      __m512 wv[R];
      for (int i = 0; i < R; ++i) {
        // Fetch the next tile's rows (contiguous after these) to keep misses in flight.
        _mm_prefetch(reinterpret_cast<const char*>(w[i] + R * a.w_stride + i0 * kElemBytes<T>), _MM_HINT_T0);
        wv[i] = load16<T>(w[i], i0);
      }
      for (int j = 0; j < C; ++j) {
        const __m512 xv = _mm512_loadu_ps(x[j] + i0);
        for (int i = 0; i < R; ++i) acc[i][j] = _mm512_fmadd_ps(wv[i], xv, acc[i][j]);
      }
    }
    if (full < a.k) {  // zero-padded last chunk, widened through the scalar path (exact)
      const int len = static_cast<int>(a.k - full);
      alignas(64) float wt[R][16], xt[C][16];
      for (int i = 0; i < R; ++i)
        for (int l = 0; l < 16; ++l) wt[i][l] = l < len ? dense_weight<T>(w[i], full + l) : 0.0f;
      for (int j = 0; j < C; ++j)
        for (int l = 0; l < 16; ++l) xt[j][l] = l < len ? x[j][full + l] : 0.0f;
      for (int j = 0; j < C; ++j)
        for (int i = 0; i < R; ++i)
          acc[i][j] = _mm512_fmadd_ps(_mm512_load_ps(wt[i]), _mm512_load_ps(xt[j]), acc[i][j]);
    }
    for (int i = 0; i < R; ++i)
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = reduce(acc[i][j]);
  }
};

template <DenseType T>
void gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Avx512<T>, 4, 4>(a, r0, r1, c0, c1);
}

}  // namespace

GemmFn dense_gemm_avx512(DenseType type) noexcept {
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
GemmFn dense_gemm_avx512(DenseType) noexcept { return nullptr; }
}  // namespace graft::quant
#endif
