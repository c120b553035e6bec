// Q8_0 in the AVX2 kernels' own layout ("q8_0_rows4", FormatKernels::prepare): 4 weight rows
// interleaved, the scales of 8 blocks apart from their quants. One core then reads a group as a
// single forward stream (four short rows at once starve this core's prefetchers: measured 6.5 vs
// 10+ GB/s for one thread at k = 1024), the quant loads are 32-byte aligned (k a multiple of 128;
// a file block's quants straddle cache lines half the time), and the products d_w * d_x come 8
// blocks per instruction.
//
// A group of 4 rows holds, per chunk c of nc = min(8, nb - 8c) blocks (136 nc bytes, at 1088 c):
//   [0, 8 nc)         the fp16 scales: row i's block j at 2 (nc i + j) (a whole chunk: row i's 8 at 16 i)
//   [8 nc, 136 nc)    the quants: block j of row i at 8 nc + 32 (4 j + i)
// Groups follow each other, ceil(m / 4) of them, 4 rows' bytes each; the rows past m in the last
// group are zero (their outputs are never stored). The same bytes as the file's rows, rearranged.
//
// Read at the avx2 level, for rows of at most kQ8Rows4MaxK elements: with longer rows the file's
// four rows side by side are long enough streams for the hardware prefetchers, and one stream per
// thread was slower (quant_bench, 1 and 2 threads: file/rows4 at k = 1024 0.73-0.85, 2048 0.86-0.99,
// 3072 1.07-1.18, 4096 1.23-1.35). The others read the file's layout, and every level gives the
// same bits (q8_0_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "driver/format_spec.hpp"
#include "driver/gemm.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

// The layout, for the FormatSpec.
extern const PackedLayout kQ8_0Rows4;

inline constexpr int kQ8GroupRows = 4;
inline constexpr int kQ8ChunkBlocks = 8;
inline constexpr std::int64_t kQ8Rows4MaxK = 2048;

std::uint64_t q8_0_rows4_bytes(std::int64_t k, std::int64_t m) noexcept;
void q8_0_pack_rows4(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                     std::int64_t g1, std::uint8_t* out) noexcept;
bool q8_0_rows4_level(SimdLevel level) noexcept;
bool q8_0_rows4_row_length(std::int64_t k) noexcept;

// The kernel on it: GemmArgs::w is the packed matrix, w_stride one row's bytes (group r / 4 starts
// at w + r * w_stride), r0 a multiple of 4, r1 one or m.
void q8_0_rows4_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
