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
// Read at the avx512 (with AVX512-VBMI) and amx levels. The AVX2 kernels read "rows32" instead
// (below); the scalar kernels read the file's layout, and every level gives the same bits
// (bonsai_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "driver/format_spec.hpp"
#include "driver/gemm.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

// The two layouts, for the FormatSpec (rows16 first: where both are read, it is).
extern const PackedLayout kQ1_0Rows16, kQ1_0Rows32;

inline constexpr int kQ1GroupRows = 16;
inline constexpr std::int64_t kQ1GroupBlockBytes = kQ1GroupRows * 18;  // one 128-element block of a group
inline constexpr std::int64_t kQ1GroupSignsAt = 2 * kQ1GroupRows;    // sub-block s's signs: +64 s

// Bytes of the packed form of m rows of k elements.
std::uint64_t q1_0_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
// Packs groups [g0, g1) of the m rows at w (row stride `stride` bytes) into out (the whole packed
// matrix: group g is written at out + g * 16 * row bytes).
void q1_0_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

// Q1_0 "rows32" (q1_0_lut_avx2.cpp): 32 weight rows interleaved as byte planes, so that one 32-byte
// load brings byte j of a sub-block's signs for all 32 rows, one table lookup (vpshufb) index per
// nibble. A group of 32 rows holds, per 128-element block b of those rows (576 bytes, 32 x 18):
//   64 bytes: the 32 rows' fp16 scales (row i at 2i)
//   4 x 4 x 32 bytes: sub-block s = 0..3, plane j = 0..3: code byte 4s + j of row i at position
//   kQ1PlanePos(i) (an order the kernel's unpacking puts back in row order).
// Groups follow each other, ceil(m / 32) of them, the rows past m zero (as rows16).
inline constexpr int kQ1PlaneRows = 32;
// Row 8q + 4h + e (q < 4, h < 2, e < 4) sits at position 16h + 4q + e of a plane.
constexpr int kQ1PlanePos(int row) { return 16 * (row / 4 % 2) + 4 * (row / 8) + row % 4; }
inline constexpr std::int64_t kQ1PlaneBlockBytes = kQ1PlaneRows * 18;
inline constexpr std::int64_t kQ1PlaneSignsAt = 2 * kQ1PlaneRows;  // sub-block s, plane j: +128 s + 32 j

std::uint64_t q1_0_planes_bytes(std::int64_t k, std::int64_t m) noexcept;
void q1_0_pack_planes(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;
// Every x86 level but scalar. Listed after rows16 (FormatSpec::packed: the first a level reads
// wins), so it is read at avx2, and at avx512 / amx where rows16 is not (no AVX512-VBMI: the avx512
// kernels run the AVX2 ones there).
bool q1_0_planes_level(SimdLevel level) noexcept;
// AVX2 kernels on rows32 (r0 a multiple of 32, r1 one or m).
void q1_0_planes_gemm_avx2(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

// Kernels on the packed layout: GemmArgs::w is the packed matrix, w_stride one row's bytes
// (so group r / 16 starts at w + r * w_stride), r0 a multiple of 16, r1 one or m.
void q1_0_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
// AMX tiles where amx_pays, q1_0_packed_gemm_avx512 otherwise.
void q1_0_packed_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
