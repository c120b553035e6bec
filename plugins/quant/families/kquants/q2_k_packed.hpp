// Q2_K in the kernels' own layout ("q2_k_rows4", FormatKernels::prepare): 4 weight rows interleaved
// per 256-element block, two rows sharing each code vector (128-bit lanes 0 and 2 the first row's,
// 1 and 3 the second's), in an order where the decode kernel's vpdpbusd, vpackssdw and vpdpwssd
// leave each row's definition lanes S[l] whole in their own dwords: [first row l = 0..3 | second
// row l = 0..3 | first row 4..7 | second row 4..7], no fold of two halves per row; the 4 rows' fp16
// factors convert in one instruction.
//
// A group of 4 rows holds, per block b of those rows (336 bytes, 4 x 84):
//   [0, 8)      the rows' fp16 d (row i at 2i)
//   [8, 16)     the rows' fp16 dmin with the sign flipped (-dmin: exact)
//   [16, 80)    row i's 16 scale bytes at 16 + 16i, as in the file (scale low nibble, min high)
//   [80, 336)   rows 2h and 2h + 1's codes at 80 + 128h: two 64-byte vectors V = 0, 1; bits 2f,
//               2f + 1 of byte 4q + e of vector V hold the code of element q2_pair_element(V, q,
//               e, f) of row 2h + (q / 4) % 2
// Groups follow each other, ceil(m / 4) of them; the rows past m in the last group are zero (their
// outputs are never stored). The same bytes as the file's rows, rearranged.
//
// Read at the avx512 and amx levels on CPUs with AVX512-VBMI and GFNI (packed_groups.hpp);
// the other levels read the file's layout, and every level gives the same bits (q2_k_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "driver/format_spec.hpp"
#include "driver/gemm.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

inline constexpr int kQ2GroupRows = 4;

// Group (j, l) = elements 32j + 4l .. 32j + 4l + 3 of the definition (q2_k_gemm.hpp). After
// vpdpbusd of field f of vector V, vpackssdw of fields 2P and 2P + 1 puts dword q's group in word
// q % 2 of dword 4 (q / 4) + 2 (f % 2) + (q % 4) / 2: every group landing in one dword then has
// the same l, and j = 4V + 2P + q % 2 runs over all 8.
constexpr int q2_pair_element(int v, int q, int e, int f) {
  const int j = 4 * v + 2 * (f / 2) + q % 2, l = 4 * ((q / 4) / 2) + 2 * (f % 2) + (q % 4) / 2;
  return 32 * j + 4 * l + e;
}

// vpermb controls from element order into that order, for the packer's codes and the decode
// kernel's activations alike: byte 4q + e of field f's vector takes byte field[f % 2][4q + e] of
// elements 64 (2V + f / 2) .. + 63 (the same for every V and f / 2).
struct Q2PairOrder {
  alignas(64) std::uint8_t field[2][64];
};
constexpr Q2PairOrder make_q2_pair_order() {
  Q2PairOrder o{};
  for (int odd = 0; odd < 2; ++odd)
    for (int q = 0; q < 16; ++q)
      for (int e = 0; e < 4; ++e) o.field[odd][4 * q + e] = static_cast<std::uint8_t>(q2_pair_element(0, q, e, odd) % 64);
  return o;
}
inline constexpr Q2PairOrder kQ2PairOrder = make_q2_pair_order();
inline constexpr std::int64_t kQ2GroupBlockBytes = kQ2GroupRows * 84;
inline constexpr std::int64_t kQ2GroupNegDminAt = 8;
inline constexpr std::int64_t kQ2GroupScalesAt = 16;
inline constexpr std::int64_t kQ2GroupCodesAt = 80;

// The layout, for the FormatSpec.
extern const PackedLayout kQ2_KRows4;

std::uint64_t q2_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
void q2_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

// The kernels on the packed layout: GemmArgs::w is the packed matrix, w_stride one row's bytes
// (group r / 4 starts at w + r * w_stride), r0 a multiple of 4, r1 one or m.
void q2_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
// The amx level's: AMX tiles for the batches amx_pays takes (q2_k_packed_amx.cpp), the avx512
// kernel for the others.
void q2_k_packed_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

// Row `row`'s block b of the packed matrix expanded as the batch kernels read it, at out
// (kQ2KExpandedBytes, laid out as q2_k_batch_avx512.hpp says).
void q2_k_packed_expand(const GemmArgs& a, std::int64_t row, std::int64_t b, std::uint8_t* out);

}  // namespace graft::quant
