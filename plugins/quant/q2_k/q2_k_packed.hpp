// Q2_K in the kernels' own layout ("q2_k_rows4", FormatKernels::prepare): 4 weight rows interleaved
// per 256-element block, the codes in the K-quant packed order (k_pack_order.hpp), so that the
// decode kernel pairs two groups' sums per dword with vpackssdw instead of unpacking and applying
// each sub-block scale separately, and the 4 rows' fp16 factors convert in one instruction.
//
// A group of 4 rows holds, per block b of those rows (336 bytes, 4 x 84):
//   [0, 8)      the rows' fp16 d (row i at 2i)
//   [8, 16)     the rows' fp16 dmin with the sign flipped (-dmin: exact)
//   [16, 80)    row i's 16 scale bytes at 16 + 16i, as in the file (scale low nibble, min high)
//   [80, 336)   row i's codes at 80 + 64i: bits 2f, 2f + 1 of byte 4n + e hold the code of element
//               k_pack_first(f / 2, f % 2, n) + e (f = 0..3)
// Groups follow each other, ceil(m / 4) of them; the rows past m in the last group are zero (their
// outputs are never stored). The same bytes as the file's rows, rearranged.
//
// Read at the avx512 and amx levels on CPUs with AVX512-VBMI and GFNI (packed_groups.hpp);
// the other levels read the file's layout, and every level gives the same bits (q2_k_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm.hpp"
#include "simd_level.hpp"

namespace graft::quant {

inline constexpr int kQ2GroupRows = 4;
inline constexpr std::int64_t kQ2GroupBlockBytes = kQ2GroupRows * 84;
inline constexpr std::int64_t kQ2GroupNegDminAt = 8;
inline constexpr std::int64_t kQ2GroupScalesAt = 16;
inline constexpr std::int64_t kQ2GroupCodesAt = 80;

std::uint64_t q2_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
void q2_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

// The kernels on the packed layout: GemmArgs::w is the packed matrix, w_stride one row's bytes
// (group r / 4 starts at w + r * w_stride), r0 a multiple of 4, r1 one or m.
void q2_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
