// The batch walk of the AVX-512 kernels that read the Q8_K activations' column-pair layout (Q2_K,
// Q3_K): each row tile's blocks are expanded ONCE per call into a per-thread scratch (kernel
// format: K::expand), then every column tile of the call reuses them, so the weight unpacking is
// paid once per 4 rows instead of once per 4 rows x 8 columns. Columns run in pairs; columns off
// the pair layout (an odd start, or past 2 n_pairs) take the per-column kernel S: the same values.
//
// K provides: kRows, kColumns (even), kExpandedBytes (a multiple of 64), kBlockElems,
// expand(a, row, b, out) and tile<R, C>(a, ex, r, c) with ex = the tile's expansion, [nb][R]
// (PairBatchTile<W> below is that tile for blocks of 256 whose steps W gives).
#pragma once

#include <algorithm>
#include <cstdint>

#include "activations/q8k_activations.hpp"
#include "driver/gemm.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

// Expansion step z (elements 64z .. 64z+63, 16 per sub-block): each element's byte of the
// sub-block scales held as bytes 0..15 of every 128-bit lane of sc4.
GRAFT_TARGET_AVX512 inline __m512i pair_step_scales(__m512i sc4, int z) {
  const long long s = 0x0101010101010101ll * (4 * z);
  const long long one = 0x0101010101010101ll;
  return _mm512_shuffle_epi8(sc4, _mm512_setr_epi64(s, s, s + one, s + one, s + 2 * one, s + 2 * one, s + 3 * one,
                                                    s + 3 * one));
}

// One expanded block against a column pair's 256 quants each: wq[j] holds the block's 32 weight
// bytes of chunk j in both 256-bit halves, the pair layout holds chunk j of both columns in one
// vector, so each vpdpbusd adds group (j, l) of column 2p into dword l and of column 2p + 1 into
// dword 8 + l: [column 2p's 8 lanes | column 2p + 1's] from the start s, exact integers, with no
// fold of two halves (which the earlier 4 x 64-byte steps needed: 3 more operations per pair).
GRAFT_TARGET_AVX512 inline __m512i pair_lane_sums(const __m512i wq[8], const std::int8_t* pb, __m512i s) {
  // Two chains: one chain of 8 (vpdpbusd's latency times 8) left the ports idle, and four were
  // no faster than two (docs/benchmarks.md).
  __m512i t = _mm512_setzero_si512();
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 8; j += 2) {
    s = _mm512_dpbusd_epi32(s, wq[j], _mm512_load_si512(pb + 64 * j));
    t = _mm512_dpbusd_epi32(t, wq[j + 1], _mm512_load_si512(pb + 64 * j + 64));
  }
  return _mm512_add_epi32(s, t);
}

// The tile of K: R expanded rows x C columns (C even, from an even column c), two columns per
// 512-bit f32 register, each output's 8 lanes folded by x86::hsum8. The format's steps W provide
// kExpandedBytes, Row, load_row(e) -> Row (what a row's expanded block holds besides its 256 code
// bytes) and step(row, wq, pb, acc) -> acc (the block's integer sums and f32 steps for the column
// pair whose quants start at pb).
template <class W>
struct PairBatchTile {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, const std::uint8_t* ex, std::int64_t r, std::int64_t c) {
    constexpr int P = C / 2;
    constexpr std::int64_t kPB = Q8KActivations::kPairBytes;
    const std::int64_t nb = a.k / kQK_K;
    __m512 acc[R][P];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
    const std::int8_t* xp = a.xk->pair_block(c / 2, 0);
    const std::int64_t x_step = a.xk->n_pairs * kPB;
    for (std::int64_t b = 0; b < nb; ++b, xp += x_step, ex += R * W::kExpandedBytes) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* e = ex + i * W::kExpandedBytes;
        __m512i wq[8];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; ++j) wq[j] = _mm512_broadcast_i64x4(_mm256_load_si256(reinterpret_cast<const __m256i*>(e + 32 * j)));
        const typename W::Row row = W::load_row(e);
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) acc[i][p] = W::step(row, wq, xp + p * kPB, acc[i][p]);
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p)
        x86::store_hsum8_halves(acc[i][p], a.y + (c + 2 * p) * a.y_stride + r + i, a.y + (c + 2 * p + 1) * a.y_stride + r + i);
  }
};

template <class K, class S, int R, int C>
inline void pair_batch_columns(const GemmArgs& a, const std::uint8_t* ex, std::int64_t r, std::int64_t c,
                               std::int64_t c1) {
  for (; c + C <= c1; c += C) K::template tile<R, C>(a, ex, r, c);
  if constexpr (C > 2) {
    pair_batch_columns<K, S, R, C / 2>(a, ex, r, c, c1);
  } else {
    for (; c < c1; ++c) S::template tile<R, 1>(a, r, c);
  }
}

template <class K, class S, int R>
inline void pair_batch_rows(const GemmArgs& a, std::int64_t r, std::int64_t c0, std::int64_t c1, std::uint8_t* ex) {
  const std::int64_t nb = a.k / K::kBlockElems;
  for (std::int64_t b = 0; b < nb; ++b)
    for (int i = 0; i < R; ++i) K::expand(a, r + i, b, ex + (b * R + i) * K::kExpandedBytes);
  pair_batch_columns<K, S, R, K::kColumns>(a, ex, r, c0, c1);
}

template <class K, class S>
inline void pair_batch(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  const std::int64_t pair_end = c0 % 2 == 0 ? std::min(c1, 2 * a.xk->n_pairs) : c0;
  if (pair_end - c0 < 2) {
    walk_tiles<S, 4, 1>(a, r0, r1, c0, c1);
    return;
  }
  constexpr int R = K::kRows;
  thread_local AlignedVector<std::uint8_t> scratch;
  scratch.resize(static_cast<std::size_t>(a.k / K::kBlockElems * R * K::kExpandedBytes));
  std::int64_t r = r0;
  for (; r + R <= r1; r += R) pair_batch_rows<K, S, R>(a, r, c0, pair_end, scratch.data());
  for (; r < r1; ++r) pair_batch_rows<K, S, 1>(a, r, c0, pair_end, scratch.data());
  if (pair_end < c1) walk_tiles<S, 4, 1>(a, r0, r1, pair_end, c1);
}

}  // namespace graft::quant
