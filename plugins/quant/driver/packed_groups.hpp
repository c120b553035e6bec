// The walk the packed layouts' pack functions share (PackedLayout, format_spec.hpp): groups of
// `rows` weight rows one after another, each holding its rows' bytes rearranged (the same bytes as
// the file's); the rows past m in a last partial group are zero (their outputs are never stored).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "cpu_features.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

// Whether `level` is one whose packed-layout kernels run on this CPU: avx512 and amx, with
// AVX512-VBMI (vpermb, vpermt2b, vpmultishiftqb) and GFNI (Q2_K's code fields); elsewhere the
// file's layout is read. (Every CPU with VBMI has GFNI but Cannon Lake.)
inline bool packed_layout_level(SimdLevel level) noexcept {
#ifdef __x86_64__
  return (level == SimdLevel::avx512 || level == SimdLevel::amx) && cpu_features().avx512vbmi && cpu_features().gfni;
#else
  (void)level;
  return false;
#endif
}

inline std::uint64_t packed_groups_bytes(std::int64_t nb, std::int64_t m, int rows, std::size_t block_bytes) noexcept {
  const auto groups = static_cast<std::uint64_t>((m + rows - 1) / rows);
  return groups * static_cast<std::uint64_t>(rows) * block_bytes * static_cast<std::uint64_t>(nb);
}

// The walk every layout's packing shares: for groups [g0, g1) of the m rows at w (row stride
// `stride`), fn(i, row, dst) for each row i of a group, row its bytes in the file and dst the
// group's group_bytes in out (groups one after another); a last partial group is zeroed first, so
// its rows past m are zero.
template <class Fn>
void for_each_group_row(const std::uint8_t* w, std::size_t stride, std::int64_t m, int rows, std::size_t group_bytes,
                        std::int64_t g0, std::int64_t g1, std::uint8_t* out, Fn&& fn) {
  for (std::int64_t g = g0; g < g1; ++g) {
    std::uint8_t* dst = out + static_cast<std::size_t>(g) * group_bytes;
    const std::int64_t used = std::min<std::int64_t>(rows, m - g * rows);
    if (used < rows) std::memset(dst, 0, group_bytes);
    for (std::int64_t i = 0; i < used; ++i)
      fn(static_cast<int>(i), w + static_cast<std::size_t>(g * rows + i) * stride, dst);
  }
}

// Layouts that keep block b of a group's rows at b * rows * block_bytes: fill(i, src, dst) for
// each row i of a group and each block, src the file's block, dst the group's block in out. fill
// must write every byte of its row's share of dst.
template <class Fill>
void pack_row_groups(const std::uint8_t* w, std::size_t stride, std::int64_t nb, std::int64_t m, int rows,
                     std::size_t block_bytes, std::int64_t g0, std::int64_t g1, std::uint8_t* out, Fill&& fill) {
  const std::size_t group_block = static_cast<std::size_t>(rows) * block_bytes;
  for_each_group_row(w, stride, m, rows, group_block * static_cast<std::size_t>(nb), g0, g1, out,
                     [&](int i, const std::uint8_t* row, std::uint8_t* dst) {
                       for (std::int64_t b = 0; b < nb; ++b) {
                         const auto at = static_cast<std::size_t>(b);
                         fill(i, row + at * block_bytes, dst + at * group_block);
                       }
                     });
}

}  // namespace graft::quant
