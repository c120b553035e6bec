// The AVX-512 batch tile of Q2_K (pair_batch.hpp), shared by the file-layout kernel and the packed
// one (q2_k_packed.hpp): each row tile's blocks are expanded once per call into code * scale bytes
// (0..45) in step order (step z: elements 64z .. 64z + 63), the mins as 16 int16 twice, d and -dmin;
// every column pair then uses vpdpbusd straight on them, two activation columns per 512-bit
// register for the f32 work: the same lane values and f32 operations as the definition.
// Include once per translation unit, inside namespace graft::quant's anonymous namespace users.
#pragma once

#include <cstdint>
#include <cstring>

#include "gemm.hpp"
#include "pair_batch.hpp"
#include "q2_k_block.hpp"
#include "x86_simd.hpp"

namespace graft::quant {
namespace {

constexpr std::int64_t kQ2KExpandedBytes = 384;  // wq 256 | mins2 64 | d, -dmin | pad

// The file block's codes, step by step: byte e of step z is element 64z + e, code bits 2s, 2s + 1
// of qs[32h + e % 32] with h = z / 2, s = 2 (z % 2) + e / 32.
struct StepCodes {
  __m512i z[4];
};
GRAFT_TARGET_AVX512 inline StepCodes file_step_codes(const std::uint8_t* blk) {
  StepCodes c;
  for (int z = 0; z < 4; ++z) {
    const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 + 32 * (z / 2))));
    c.z[z] = _mm512_and_si512(
        _mm512_srlv_epi64(bits, z % 2 ? _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6) : _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2)),
        _mm512_set1_epi8(3));
  }
  return c;
}

// sm: the block's 16 scale bytes (scale in the low nibble, min in the high one); d, dmin: its fp16
// factors as f32.
GRAFT_TARGET_AVX512 inline void expand_block(__m128i sm, const StepCodes& codes, float d, float dmin, std::uint8_t* out) {
  const __m128i m4 = _mm_set1_epi8(0x0F);
  _mm512_store_si512(out + 256, _mm512_broadcast_i64x4(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4))));
  // Byte e of step z: sub-block 4z + e / 16 (its 128-bit lane).
  const __m512i sc4 = _mm512_broadcast_i32x4(_mm_and_si128(sm, m4));
  for (int z = 0; z < 4; ++z) {
    const __m512i sb = pair_step_scales(sc4, z);
    // code * scale as sb * (code & 1) + 2 sb * (code >> 1): no byte multiply on x86.
    const __m512i one = _mm512_maskz_mov_epi8(_mm512_test_epi8_mask(codes.z[z], _mm512_set1_epi8(1)), sb);
    _mm512_store_si512(out + 64 * z, _mm512_mask_add_epi8(one, _mm512_test_epi8_mask(codes.z[z], _mm512_set1_epi8(2)), one,
                                                          _mm512_add_epi8(sb, sb)));
  }
  const float ndmin = -dmin;
  std::memcpy(out + 320, &d, 4);
  std::memcpy(out + 324, &ndmin, 4);
}

// The tile; users add expand(a, row, b, out) for their layout.
struct Q2KAvx512Batch {
  // R rows (expanded in ex, [nb][R] blocks) x C columns, C even, from column c (even).
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, const std::uint8_t* ex, std::int64_t r, std::int64_t c) {
    constexpr int P = C / 2;
    constexpr std::int64_t kPB = Q8KActivations::kPairBytes;
    const std::int64_t nb = a.k / kQ2KBlockElems;
    __m512 acc[R][P];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
    const std::int8_t* xp = a.xk->pair_block(c / 2, 0);
    const std::int64_t x_step = a.xk->n_pairs * kPB;
    for (std::int64_t b = 0; b < nb; ++b, xp += x_step, ex += R * kQ2KExpandedBytes) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* e = ex + i * kQ2KExpandedBytes;
        __m512i wq[4];
        _Pragma("GCC unroll 4")
        for (int z = 0; z < 4; ++z) wq[z] = _mm512_load_si512(e + 64 * z);
        const __m512i mins2 = _mm512_load_si512(e + 256);
        const __m512 dw = _mm512_set1_ps(*reinterpret_cast<const float*>(e + 320));
        const __m512 ndmw = _mm512_set1_ps(*reinterpret_cast<const float*>(e + 324));
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) {
          const std::int8_t* pb = xp + p * kPB;
          const __m512i sum = pair_lane_sums(wq, pb, _mm512_setzero_si512(), _mm512_setzero_si512());
          const __m512i msum = _mm512_madd_epi16(mins2, _mm512_load_si512(pb + 512));
          const __m512 dxv = _mm512_load_ps(reinterpret_cast<const float*>(pb + 576));
          // -d_x * dmin equals d_x * -dmin exactly (rounding is sign-symmetric).
          acc[i][p] = _mm512_fmadd_ps(_mm512_mul_ps(dxv, ndmw), _mm512_cvtepi32_ps(msum), acc[i][p]);
          acc[i][p] = _mm512_fmadd_ps(_mm512_mul_ps(dxv, dw), _mm512_cvtepi32_ps(sum), acc[i][p]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p) {
        x86::store_hsum8_halves(acc[i][p], a.y + (c + 2 * p) * a.y_stride + r + i, a.y + (c + 2 * p + 1) * a.y_stride + r + i);
      }
  }

  static constexpr int kRows = 4, kColumns = 8;
  static constexpr std::int64_t kBlockElems = kQ2KBlockElems, kExpandedBytes = kQ2KExpandedBytes;
};


}  // namespace
}  // namespace graft::quant
