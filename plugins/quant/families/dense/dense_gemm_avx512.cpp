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

// The same reduction of 16 outputs' lane sums at once, each add pairing the same two partial
// sums as the one-output sequence in dense_gemm.hpp (so the bits are the same): a transpose that
// halves the vectors at each of the four levels instead of 16 separate horizontal reductions,
// which cost a third of a 4x4 tile at k = 256. Lane 4i + j of the result is a[4j + i].
GRAFT_TARGET_AVX512 static inline __m512 reduce16(const __m512* a) {
  __m512 h[8], q[4], t[2];
  for (int p = 0; p < 8; ++p)  // [a[2p]: l + (l+8) for l < 8 | a[2p+1]: the same]
    h[p] = _mm512_add_ps(_mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_f32x4(a[2 * p], a[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  for (int p = 0; p < 4; ++p)  // quarter i: a[4p + i]'s h[l] + h[l+4] for l < 4
    q[p] = _mm512_add_ps(_mm512_shuffle_f32x4(h[2 * p], h[2 * p + 1], _MM_SHUFFLE(2, 0, 2, 0)),
                         _mm512_shuffle_f32x4(h[2 * p], h[2 * p + 1], _MM_SHUFFLE(3, 1, 3, 1)));
  for (int p = 0; p < 2; ++p)  // quarter i: [t0, t1] of a[8p + i], then of a[8p + 4 + i]
    t[p] = _mm512_add_ps(_mm512_shuffle_ps(q[2 * p], q[2 * p + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(q[2 * p], q[2 * p + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  // quarter i: t0 + t1 of a[i], a[4 + i], a[8 + i], a[12 + i]
  return _mm512_add_ps(_mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(t[0], t[1], _MM_SHUFFLE(3, 1, 3, 1)));
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
      // Unrolled by hand-set pragmas: past about 16 accumulators GCC stops unrolling on its own and
      // keeps them in memory.
      __m512 wv[R];
#pragma GCC unroll 8
      for (int i = 0; i < R; ++i) {
        // Fetch the next tile's rows (contiguous after these) to keep misses in flight.
        _mm_prefetch(reinterpret_cast<const char*>(w[i] + R * a.w_stride + i0 * kElemBytes<T>), _MM_HINT_T0);
        wv[i] = load16<T>(w[i], i0);
      }
#pragma GCC unroll 8
      for (int j = 0; j < C; ++j) {
        const __m512 xv = _mm512_loadu_ps(x[j] + i0);
#pragma GCC unroll 8
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
    if constexpr (R == 4 && C == 4) {
      // acc[i][j] as entry 4i + j: quarter j of the reduced vector is column j's four rows.
      // (The lane index of an extract is an immediate: spelled out, so that -O0 builds compile.)
      const __m512 all = reduce16(&acc[0][0]);
      float* y = a.y + c * a.y_stride + r;
      _mm_storeu_ps(y, _mm512_extractf32x4_ps(all, 0));
      _mm_storeu_ps(y + a.y_stride, _mm512_extractf32x4_ps(all, 1));
      _mm_storeu_ps(y + 2 * a.y_stride, _mm512_extractf32x4_ps(all, 2));
      _mm_storeu_ps(y + 3 * a.y_stride, _mm512_extractf32x4_ps(all, 3));
    } else {
      for (int i = 0; i < R; ++i)
        for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = reduce(acc[i][j]);
    }
  }
};

// Columns [c0, c1) of rows [r, r + R) in 4-wide tiles, the leftover in ONE tile (3, 5 or 6 wide)
// rather than the 2 + 1 of walk_columns: every extra tile widens the weights again, and a 1- or
// 2-wide tile multiplies at a fraction of the 4-wide rate. Verification passes have 2 to 8 rows,
// where this is a fifth of the pass at 3 rows (docs/benchmarks.md).
template <DenseType T, int R>
void walk_columns_one_leftover(const GemmArgs& a, std::int64_t r, std::int64_t c0, std::int64_t c1) {
  const std::int64_t n = c1 - c0;
  std::int64_t left = n % 4, fours = n / 4;
  if (fours > 0 && (left == 1 || left == 2)) left += 4, --fours;
  std::int64_t c = c0;
  for (; fours > 0; --fours, c += 4) Avx512<T>::template tile<R, 4>(a, r, c);
  switch (left) {
    case 1: return Avx512<T>::template tile<R, 1>(a, r, c);
    case 2: return Avx512<T>::template tile<R, 2>(a, r, c);
    case 3: return Avx512<T>::template tile<R, 3>(a, r, c);
    case 5: return Avx512<T>::template tile<R, 5>(a, r, c);
    case 6: return Avx512<T>::template tile<R, 6>(a, r, c);
    default: return;
  }
}

template <DenseType T>
void gemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  std::int64_t r = r0;
  for (; r + 4 <= r1; r += 4) walk_columns_one_leftover<T, 4>(a, r, c0, c1);
  for (; r < r1; ++r) walk_columns_one_leftover<T, 1>(a, r, c0, c1);
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
