// AMX Q1_0 kernel for batches (bonsai_gemm_amx.hpp): a sub-block's sign bits of 16 rows, gathered
// into one register (one load in the packed layout, q1_0_packed.hpp), become the B tile's signed
// codes +-1 with one bit shuffle and one blend per tile row; narrow batches and decode run the
// AVX-512 kernel.
#include "families/bonsai/q1_0_gemm.hpp"
#include "families/bonsai/q1_0_packed.hpp"

#ifdef __x86_64__
#include "families/bonsai/bonsai_gemm_amx.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

// Byte j = 4 * row + c of B row k4 is code 4 * k4 + c of the row: bit 32 * (row % 2) + 4 * k4 + c
// of the row pair's 64-bit word (vpshufbitqmb picks one bit per byte of its qword).
struct Q1BitCtrl {
  alignas(64) std::uint8_t bits[8][64];
};
constexpr Q1BitCtrl make_q1_bit_ctrl() {
  Q1BitCtrl t{};
  for (int k4 = 0; k4 < 8; ++k4)
    for (int j = 0; j < 64; ++j) t.bits[k4][j] = static_cast<std::uint8_t>(32 * ((j / 4) % 2) + 4 * k4 + j % 4);
  return t;
}
constexpr Q1BitCtrl kQ1BitCtrl = make_q1_bit_ctrl();

// A sub-block's 16 rows of sign bits (dword i: row i) as the B tile's codes at dst.
GRAFT_TARGET_AMX inline void expand_signs(__m512i bits, std::int8_t* dst) {
  const __m512i plus = _mm512_set1_epi8(1), minus = _mm512_set1_epi8(-1);
  for (int k4 = 0; k4 < 8; ++k4) {
    const __mmask64 plus_at = _mm512_bitshuffle_epi64_mask(bits, _mm512_load_si512(kQ1BitCtrl.bits[k4]));
    _mm512_store_si512(dst + 64 * k4, _mm512_mask_blend_epi8(plus_at, minus, plus));
  }
}

struct Q1Amx {
  static constexpr int kSubPerBlock = 4, kLanesPerSub = 1;
  static constexpr std::int64_t kBlockBytes = 18;

  GRAFT_TARGET_AMX static void unpack_tile(const std::uint8_t* w, std::int64_t stride, std::int64_t rows,
                                           std::int64_t blocks, std::int8_t* codes, float* dw) {
    const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
    const __m512i row_at = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                              _mm512_set1_epi32(static_cast<int>(stride)));
    for (std::int64_t b = 0; b < blocks; ++b) {
      for (int i = 0; i < 16; ++i) {
        std::uint16_t d = 0;
        if (i < rows) std::memcpy(&d, w + i * stride + b * kBlockBytes, 2);
        dw[16 * b + i] = i < rows ? f16_to_f32(d) : 0.0f;
      }
      for (int sb = 0; sb < kSubPerBlock; ++sb) {
        // Sub-block sb's 32 sign bits of each row (missing rows: zeros, weighted by scale 0).
        const __m512i bits = _mm512_mask_i32gather_epi32(_mm512_setzero_si512(), m, row_at,
                                                         w + b * kBlockBytes + 2 + 4 * sb, 1);
        expand_signs(bits, codes + (b * kSubPerBlock + sb) * 512);
      }
    }
  }
};

// The same from the packed layout: w is the group's start; its missing rows are zeros already.
struct Q1AmxPacked {
  static constexpr int kSubPerBlock = 4, kLanesPerSub = 1;

  GRAFT_TARGET_AMX static void unpack_tile(const std::uint8_t* w, std::int64_t, std::int64_t rows,
                                           std::int64_t blocks, std::int8_t* codes, float* dw) {
    const __mmask16 m = static_cast<__mmask16>((1u << rows) - 1);
    for (std::int64_t b = 0; b < blocks; ++b) {
      const std::uint8_t* blk = w + b * kQ1GroupBlockBytes;
      _mm512_store_ps(dw + 16 * b, _mm512_maskz_cvtph_ps(m, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk))));
      for (int sb = 0; sb < kSubPerBlock; ++sb)
        expand_signs(_mm512_loadu_si512(blk + kQ1GroupSignsAt + 64 * sb), codes + (b * kSubPerBlock + sb) * 512);
    }
  }
};

}  // namespace

void q1_0_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (!amx_pays(c1 - c0)) return q1_0_gemm_avx512(a, r0, r1, c0, c1);
  bonsai_amx_gemm<Q1Amx>(a, r0, r1, c0, c1);
}

void q1_0_packed_gemm_amx(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (!amx_pays(c1 - c0)) return q1_0_packed_gemm_avx512(a, r0, r1, c0, c1);
  bonsai_amx_gemm<Q1AmxPacked>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
