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
//              holds the group k_pack_first(p, 0, n) in its low nibbles and k_pack_first(p, 1, n)
//              in its high nibbles (k_pack_order.hpp: vpdpbusd and vpackssdw then pair the sums
//              of two sub-blocks with the same definition lane in each dword)
// Q5_K ("q5_k_rows4") is the same with 704 bytes per block of a group: after the codes, row i's
// fifth code bits at 576 + 32i as 4 masks of 64 bits, (p, high) at 8 (2p + high): bit t is the top
// bit of the code in byte t of that nibble vector.
// Groups follow each other, ceil(m / 4) of them; the rows past m in the last group are zero (their
// outputs are never stored). The same bytes as the file's rows, rearranged.
//
// Read at the avx512 and amx levels on CPUs with AVX512-VBMI; the other levels read the file's
// layout, and every level gives the same bits (q4_k_gemm.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "driver/format_spec.hpp"
#include "driver/gemm.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

inline constexpr int kQ4GroupRows = 4;
inline constexpr std::int64_t kQ4GroupBlockBytes = kQ4GroupRows * 144;
inline constexpr std::int64_t kQ5GroupBlockBytes = kQ4GroupRows * 176;
inline constexpr std::int64_t kQ4GroupNegDminAt = 8;
inline constexpr std::int64_t kQ4GroupFieldsAt = 16;
inline constexpr std::int64_t kQ4GroupCodesAt = 64;
inline constexpr std::int64_t kQ5GroupHighBitsAt = kQ4GroupCodesAt + kQ4GroupRows * 128;

// The layouts, for the FormatSpecs.
extern const PackedLayout kQ4_KRows4, kQ5_KRows4;

std::uint64_t q4_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
// Packs groups [g0, g1) of the m rows at w (row stride `stride` bytes) into out (the whole packed
// matrix: group g is written at out + g * 4 * row bytes).
void q4_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

std::uint64_t q5_k_packed_bytes(std::int64_t k, std::int64_t m) noexcept;
void q5_k_pack_groups(const std::uint8_t* w, std::size_t stride, std::int64_t k, std::int64_t m, std::int64_t g0,
                      std::int64_t g1, std::uint8_t* out) noexcept;

// The kernels on the packed layouts: GemmArgs::w is the packed matrix, w_stride one row's bytes
// (group r / 4 starts at w + r * w_stride), r0 a multiple of 4, r1 one or m.
void q4_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);
void q5_k_packed_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1);

}  // namespace graft::quant
