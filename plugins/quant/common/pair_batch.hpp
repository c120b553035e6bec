// The batch walk of the AVX-512 kernels that read the Q8_K activations' column-pair layout (Q2_K,
// Q3_K): each row tile's blocks are expanded ONCE per call into a per-thread scratch (kernel
// format: K::expand), then every column tile of the call reuses them, so the weight unpacking is
// paid once per 4 rows instead of once per 4 rows x 8 columns. Columns run in pairs; columns off
// the pair layout (an odd start, or past 2 n_pairs) take the per-column kernel S: the same values.
//
// K provides: kRows, kColumns (even), kExpandedBytes (a multiple of 64), kBlockElems,
// expand(a, row, b, out) and tile<R, C>(a, ex, r, c) with ex = the tile's expansion, [nb][R].
#pragma once

#include <algorithm>
#include <cstdint>

#include "gemm.hpp"

namespace graft::quant {

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
