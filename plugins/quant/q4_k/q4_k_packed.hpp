// Q4_K in the kernels' own layout ("q4_k_rows4", FormatKernels::prepare): 4 weight rows
// interleaved per 256-element block, so the per-row work the file's layout leaves to scalar code
// (unpacking the 6-bit scales, converting the fp16 factors) is done for the 4 rows with a few
// vector operations, and one 64-byte load holds 128 codes ready for vpdpbusd.
//
// A group of 4 rows holds, per block b of those rows (576 bytes, 4 x 144):
//   [0, 8)     the rows' fp16 d (row i at 2i)
//   [8, 16)    the rows' fp16 dmin with the sign flipped (-dmin: exact)
//   [16, 64)   the 64 6-bit fields of the 4 rows as one little-endian bit stream, field 16i + j at
//              bit 6 (16i + j): j < 8 the scale sc[j] of row i, j >= 8 its min m[j - 8]
//   [64, 576)  row i's codes at 64 + 128i, as two 64-byte vectors p = 0, 1: dword n of vector p
//              holds 4 consecutive elements (q4_k_packed_first) in its low nibbles ("A") and 4
//              others in its high nibbles ("B"), so that vpdpbusd of each against the activations
//              in the same order, then vpackssdw, pairs the sums of two sub-blocks with the same
//              definition lane l in each dword (the kernel's comment has the whole story)
// Groups follow each other, ceil(m / 4) of them; the rows past m in the last group are zero (their
// outputs are never stored). The same bytes as the file's rows, rearranged.
//
// Read at the avx512 and amx levels on CPUs with AVX512-VBMI; the other levels read the file's
// layout, and every level gives the same bits (q4_k_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "gemm.hpp"
#include "simd_level.hpp"

namespace graft::quant {

inline constexpr int kQ4GroupRows = 4;
inline constexpr std::int64_t kQ4GroupBlockBytes = kQ4GroupRows * 144;
inline constexpr std::int64_t kQ4GroupNegDminAt = 8;
inline constexpr std::int64_t kQ4GroupFieldsAt = 16;
inline constexpr std::int64_t kQ4GroupCodesAt = 64;

// The first of the 4 elements (32 j + 4 l: sub-block j, lane l) whose codes are the low (high =
// 0) or high (high = 1) nibbles of dword n (0..15) of code vector p (0, 1). After vpackssdw(A, B),
// dword q holds the sums of sub-blocks 4p + 2 (q / 8) (low word) and 4p + 2 (q / 8) + 1 (high
// word) for lane l = q % 8.
constexpr int q4_k_packed_first(int p, int high, int n) {
  const int lane = n / 4, pair = (n % 4) / 2, word = n % 2;
  const int j = 4 * p + 2 * (lane / 2) + word;
  const int l = (4 * lane + 2 * high + pair) % 8;
  return 32 * j + 4 * l;
}

bool q4_k_packed_used_at(SimdLevel level) noexcept;
std::uint64_t q4_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
// Packs groups [g0, g1) of the m rows at w (row stride `stride` bytes) into out (the whole packed
// matrix: group g is written at out + g * 4 * row bytes).
void q4_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

// The kernel on the packed layout: GemmArgs::w is the packed matrix, w_stride the file's row bytes
// (group r / 4 starts at w + r * w_stride), r0 a multiple of 4, r1 one or m.
void q4_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
