// The AVX-512 batch tile of Q2_K (pair_batch.hpp), shared by the file-layout kernel and the packed
// one (q2_k_packed.hpp): each row tile's blocks are expanded once per call into code * scale bytes
// (0..45) in step order (step z: elements 64z .. 64z + 63), the mins as 16 int16 twice, d and -dmin;
// every column pair then uses vpdpbusd straight on them, two activation columns per 512-bit
// register for the f32 work: the same lane values and f32 operations as the definition.
// Include once per translation unit, inside namespace graft::quant's anonymous namespace users.
#pragma once

#include <cstdint>
#include <cstring>

#include "driver/gemm.hpp"
#include "families/kquants/pair_batch.hpp"
#include "formats/q2_k/block_q2_k.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {
namespace {

// One row's block expanded (expand_block): at 0, code * scale bytes (0..45) in element order; at
// kQ2KExpandedMinsAt, the 16 mins as int16, twice; at kQ2KExpandedDAt and kQ2KExpandedNegDminAt,
// d and -dmin as f32; padded to 6 lines.
constexpr std::int64_t kQ2KExpandedBytes = 384, kQ2KExpandedMinsAt = 256, kQ2KExpandedDAt = 320,
                       kQ2KExpandedNegDminAt = 324;

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
  _mm512_store_si512(out + kQ2KExpandedMinsAt, _mm512_broadcast_i64x4(_mm256_cvtepu8_epi16(_mm_and_si128(_mm_srli_epi16(sm, 4), m4))));
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
  std::memcpy(out + kQ2KExpandedDAt, &d, 4);
  std::memcpy(out + kQ2KExpandedNegDminAt, &ndmin, 4);
}

// The block's steps for PairBatchTile: the mins' sums against the activations' 16-element sums
// first, then the codes' (-d_x * dmin equals d_x * -dmin exactly: rounding is sign-symmetric).
struct Q2KPairSteps {
  static constexpr std::int64_t kExpandedBytes = kQ2KExpandedBytes;
  struct Row {
    __m512i mins2;
    __m512 dw, ndmw;
  };
  GRAFT_TARGET_AVX512 static Row load_row(const std::uint8_t* e) {
    return {_mm512_load_si512(e + kQ2KExpandedMinsAt),
            _mm512_set1_ps(*reinterpret_cast<const float*>(e + kQ2KExpandedDAt)),
            _mm512_set1_ps(*reinterpret_cast<const float*>(e + kQ2KExpandedNegDminAt))};
  }
  GRAFT_TARGET_AVX512 static __m512 step(const Row& row, const __m512i wq[8], const std::int8_t* pb, __m512 acc) {
    const __m512i sum = pair_lane_sums(wq, pb, _mm512_setzero_si512());
    const __m512i msum = _mm512_madd_epi16(row.mins2, _mm512_load_si512(pb + Q8KActivations::kPairBsumsAt));
    const __m512 dxv = _mm512_load_ps(reinterpret_cast<const float*>(pb + Q8KActivations::kPairScalesAt));
    acc = _mm512_fmadd_ps(_mm512_mul_ps(dxv, row.ndmw), _mm512_cvtepi32_ps(msum), acc);
    return _mm512_fmadd_ps(_mm512_mul_ps(dxv, row.dw), _mm512_cvtepi32_ps(sum), acc);
  }
};

// The tile; users add expand(a, row, b, out) for their layout.
struct Q2KAvx512Batch : PairBatchTile<Q2KPairSteps> {
  static constexpr int kRows = 4, kColumns = 8;
  static constexpr std::int64_t kBlockElems = kQK_K, kExpandedBytes = kQ2KExpandedBytes;
};

}  // namespace
}  // namespace graft::quant
