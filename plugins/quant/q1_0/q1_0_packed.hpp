// Q1_0 in the kernels' own layout ("rows16", FormatKernels::prepare): 16 weight rows interleaved,
// so that one 64-byte load brings sub-block g of all 16 rows and the decode kernel can look the
// rows' sign nibbles up in tables of the activations (q1_0_lut_avx512.cpp) with no gather.
//
// A group of 16 rows holds, per 128-element block b of those rows (288 bytes, 16 x 18):
//   32 bytes: the 16 rows' fp16 scales (row i at 2i)
//   4 x 64 bytes: sub-block s = 0..3 of the block: row i's 4 code bytes (32 sign bits) at 4i.
// Groups follow each other, ceil(m / 16) of them; the rows past m in the last group are zero
// (scale 0, so they add nothing and their outputs are never stored). The same bytes as the file's
// rows, rearranged: 16 * row bytes per group.
//
// Read at the avx512 (with AVX512-VBMI) and amx levels; the scalar and avx2 kernels read the file's
// layout, and every level gives the same bits (bonsai_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm.hpp"
#include "simd_level.hpp"

namespace graft::quant {

inline constexpr int kQ1GroupRows = 16;
inline constexpr std::int64_t kQ1GroupBlockBytes = kQ1GroupRows * 18;  // one 128-element block of a group
inline constexpr std::int64_t kQ1GroupSignsAt = 2 * kQ1GroupRows;    // sub-block s's signs: +64 s

// Bytes of the packed form of m rows of k elements.
std::uint64_t q1_0_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
// Packs groups [g0, g1) of the m rows at w (row stride `stride` bytes) into out (the whole packed
// matrix: group g is written at out + g * 16 * row bytes).
void q1_0_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

// Kernels on the packed layout: GemmArgs::w is the packed matrix, w_stride one row's bytes
// (so group r / 16 starts at w + r * w_stride), r0 a multiple of 16, r1 one or m.
void q1_0_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
// AMX tiles where amx_pays, q1_0_packed_gemm_avx512 otherwise.
void q1_0_packed_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
