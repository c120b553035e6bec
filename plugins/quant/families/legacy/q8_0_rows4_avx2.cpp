// AVX2 Q8_0 kernel on the q8_0_rows4 layout (q8_0_packed.hpp): a tile is one group of 4 rows by 1
// or 2 columns. Per chunk of 8 blocks the products d_w * d_x of every row and column come from one
// vcvtph2ps and one vmulps and are read back as broadcast loads; per block and row, ggml's sign trick
// as in q8_0_gemm_avx2.cpp (|w| times x carrying w's sign, then 8 lane sums of 4).
#include "families/legacy/q8_0_packed.hpp"

#ifdef __x86_64__
#include <algorithm>
#include <cstring>

#include "formats/q8_0/block_q8_0.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

constexpr int R = kQ8GroupRows;
constexpr std::int64_t kChunkBytes = kQ8ChunkBlocks * R * sizeof(block_q8_0);
// How far ahead of its reads a thread asks for its stream, into L2: the hardware alone does not
// fetch one forward stream early enough (8-32 KiB ahead, into L1 or L2, measured alike:
// docs/benchmarks_avx2.md).
constexpr int kPrefetchBytes = 8192;

template <int C>
struct Rows4Tile {
  const GemmArgs& a;
  const std::int8_t* xq[C];
  const float* dx[C];
  __m256 acc[R][C];

  GRAFT_TARGET_AVX2 Rows4Tile(const GemmArgs& args, std::int64_t c) : a(args) {
    _Pragma("GCC unroll 4")
    for (int j = 0; j < C; ++j) {
      xq[j] = a.xq->block_qs(c + j, 0);
      dx[j] = a.xq->scales(c + j);
    }
    _Pragma("GCC unroll 4")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 4")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
  }

  // Blocks b0 .. b0 + nc - 1, one chunk whose quants are at q; their scale products are in s.
  template <int NC>
  GRAFT_TARGET_AVX2 void blocks(const std::uint8_t* q, std::int64_t b0, int nc, const float (&s)[R][C][kQ8ChunkBlocks]) {
    const __m256i ones = _mm256_set1_epi16(1);
    _Pragma("GCC unroll 8")
    for (int jb = 0; jb < (NC ? NC : nc); ++jb) {
      const std::uint8_t* qb = q + 32 * R * jb;
      _mm_prefetch(reinterpret_cast<const char*>(qb + kPrefetchBytes), _MM_HINT_T1);
      _mm_prefetch(reinterpret_cast<const char*>(qb + kPrefetchBytes + 64), _MM_HINT_T1);
      __m256i x[C];
      _Pragma("GCC unroll 4")
      for (int j = 0; j < C; ++j) x[j] = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + (b0 + jb) * 32));
      _Pragma("GCC unroll 4")
      for (int i = 0; i < R; ++i) {
        const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qb + 32 * i));
        const __m256i aw = _mm256_sign_epi8(w, w);
        _Pragma("GCC unroll 4")
        for (int j = 0; j < C; ++j) {
          const __m256i p = _mm256_madd_epi16(_mm256_maddubs_epi16(aw, _mm256_sign_epi8(x[j], w)), ones);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(p), _mm256_broadcast_ss(&s[i][j][jb]), acc[i][j]);
        }
      }
    }
  }

  GRAFT_TARGET_AVX2 void run(const std::uint8_t* g) {
    const std::int64_t nb = a.k / kQK8_0;
    alignas(32) float s[R][C][kQ8ChunkBlocks];
    std::int64_t b0 = 0;
    for (; b0 + kQ8ChunkBlocks <= nb; b0 += kQ8ChunkBlocks) {
      const std::uint8_t* ch = g + b0 / kQ8ChunkBlocks * kChunkBytes;
      _Pragma("GCC unroll 4")
      for (int i = 0; i < R; ++i) {
        const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(ch + 16 * i)));
        _Pragma("GCC unroll 4")
        for (int j = 0; j < C; ++j) _mm256_store_ps(s[i][j], _mm256_mul_ps(dw, _mm256_loadu_ps(dx[j] + b0)));
      }
      blocks<kQ8ChunkBlocks>(ch + 16 * R, b0, kQ8ChunkBlocks, s);
    }
    if (const int nc = static_cast<int>(nb - b0); nc > 0) {  // a last chunk of fewer blocks
      const std::uint8_t* ch = g + b0 / kQ8ChunkBlocks * kChunkBytes;
      for (int i = 0; i < R; ++i)
        for (int jb = 0; jb < nc; ++jb) {
          std::uint16_t h;
          std::memcpy(&h, ch + 2 * (nc * i + jb), 2);
          for (int j = 0; j < C; ++j) s[i][j][jb] = a.fp16[h] * dx[j][b0 + jb];
        }
      blocks<0>(ch + 2 * R * nc, b0, nc, s);
    }
  }

  GRAFT_TARGET_AVX2 void store(std::int64_t r, std::int64_t rows, std::int64_t c) {
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

template <int C>
GRAFT_TARGET_AVX2 void group_tile(const GemmArgs& a, const std::uint8_t* g, std::int64_t r, std::int64_t rows, std::int64_t c) {
  Rows4Tile<C> t(a, c);
  t.run(g);
  t.store(r, rows, c);
}

}  // namespace

void q8_0_rows4_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  for (std::int64_t r = r0; r < r1; r += R) {
    const std::uint8_t* g = a.w + static_cast<std::size_t>(r) * a.w_stride;
    const std::int64_t rows = std::min<std::int64_t>(R, r1 - r);
    std::int64_t c = c0;
    for (; c + 2 <= c1; c += 2) group_tile<2>(a, g, r, rows, c);
    if (c < c1) group_tile<1>(a, g, r, rows, c);
  }
}

}  // namespace graft::quant
#endif
