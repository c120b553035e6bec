// AVX-512 VNNI Q3_K kernel: 64 elements (four sub-blocks) per 512-bit step. Unsigned codes
// low + 4 * high (0..7) by broadcast loads and per-half variable shifts; _mm512_maddubs_epi16
// against the Q8_K quants minus 4 * x per pair (computed once per column, shared by the rows);
// vpdpwssd multiplies by the signed sub-block scales and accumulates. The two 256-bit halves' lane
// sums are added (exact integers) into ggml's 8 lanes before the f32 work.
// Batches (Q3KAvx512Batch) expand each row's blocks once per call into code * scale + 124 bytes
// and use vpdpbusd straight on them: one instruction per 64 weights and column; two activation
// columns share each 512-bit f32 register.
#include "families/kquants/q3_k_gemm.hpp"

#ifdef __x86_64__
#include <cstring>

#include "families/kquants/pair_batch.hpp"
#include "formats/q3_k/block_q3_k.hpp"
#include "simd/x86_simd.hpp"

namespace graft::quant {

namespace {

struct Q3KAvx512 {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / kQK_K;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    const __m512i m3 = _mm512_set1_epi8(3), m4 = _mm512_set1_epi8(4), four = _mm512_set1_epi8(4);
    const __m512i shift_lo = _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2);
    const __m512i shift_hi = _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6);
    const __m512i sub_of_lane = _mm512_setr_epi64(0, 0, 0x0001000100010001ll, 0x0001000100010001ll, 0x0002000200020002ll,
                                                  0x0002000200020002ll, 0x0003000300030003ll, 0x0003000300030003ll);
    for (std::int64_t b = 0; b < nb; ++b) {
      // 4 * (x0 + x1) per pair, per column: the -4 offset of the codes, shared by the rows.
      __m512i corr[C][4];
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j)
        _Pragma("GCC unroll 4")
        for (int z = 0; z < 4; ++z) corr[j][z] = _mm512_maddubs_epi16(four, _mm512_loadu_si512(a.xk->block_qs(c + j, b) + 64 * z));
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const auto* blk = reinterpret_cast<const block_q3_k*>(w[i] + b * sizeof(block_q3_k));
        _mm_prefetch(reinterpret_cast<const char*>(blk) + R * a.w_stride, _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk) + R * a.w_stride + 109, _MM_HINT_T0);
        std::uint32_t s[4];
        q3k_unpack_scales(blk->scales, s);
        const __m128i s8 = _mm_sub_epi8(_mm_setr_epi32(static_cast<int>(s[0]), static_cast<int>(s[1]),
                                                       static_cast<int>(s[2]), static_cast<int>(s[3])),
                                        _mm_set1_epi8(32));
        __m512i q[4], scl[4];
        const __m512i s16 = _mm512_castsi256_si512(_mm256_cvtepi8_epi16(s8));
        _Pragma("GCC unroll 4")
        for (int z = 0; z < 4; ++z)
          scl[z] = _mm512_permutexvar_epi16(_mm512_add_epi16(_mm512_set1_epi16(static_cast<short>(4 * z)), sub_of_lane), s16);
        // High bits: element 64z + 32t + i has bit 2z + t of hmask[i]; shifted down to bit 2.
        const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->hmask)));
        _Pragma("GCC unroll 2")
        for (int h = 0; h < 2; ++h) {
          const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs + 32 * h)));
          _Pragma("GCC unroll 2")
          for (int t = 0; t < 2; ++t) {
            const int z = 2 * h + t;
            const __m512i low = _mm512_and_si512(_mm512_srlv_epi64(bits, t ? shift_hi : shift_lo), m3);
            // Bit 2z (low half) or 2z + 1 (high half) moved to bit 2: shift left by 2 - 2z or right by 2z - 2.
            const __m512i hsh = _mm512_setr_epi64(2 * z, 2 * z, 2 * z, 2 * z, 2 * z + 1, 2 * z + 1, 2 * z + 1, 2 * z + 1);
            const __m512i high = _mm512_and_si512(_mm512_slli_epi64(_mm512_srlv_epi64(hm, hsh), 2), m4);
            q[z] = _mm512_or_si512(low, high);
          }
        }
        const float dw = a.fp16[blk->d];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const std::int8_t* xq = a.xk->block_qs(c + j, b);
          const float dx = a.xk->scale(c + j, b);
          __m512i sum = _mm512_setzero_si512();
          _Pragma("GCC unroll 4")
          for (int z = 0; z < 4; ++z)
            sum = _mm512_dpwssd_epi32(
                sum, scl[z], _mm512_sub_epi16(_mm512_maddubs_epi16(q[z], _mm512_loadu_si512(xq + 64 * z)), corr[j][z]));
          const __m256i s8 = _mm256_add_epi32(_mm512_castsi512_si256(sum), _mm512_extracti64x4_epi64(sum, 1));
          acc[i][j] = _mm256_fmadd_ps(_mm256_set1_ps(dx * dw), _mm256_cvtepi32_ps(s8), acc[i][j]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

// Batches (pair_batch.hpp): each row tile's blocks are expanded once per call into unsigned bytes
// u = code * (s - 32) + 124 (the products span -124..128, so u fits 0..252), which vpdpbusd
// multiplies straight by the signed Q8_K quants; the surplus 124 * (lane sum of x) is the pair
// layout's kLaneBias lane sums, loaded as the accumulators' start. Exact integers throughout.
constexpr std::int64_t kQ3KExpandedBytes = 320;  // u 4 x 64 | d | pad
static_assert(Q8KActivations::kLaneBias == -124);

GRAFT_TARGET_AVX512 void expand_q3k_block(const block_q3_k* blk, const float* fp16, std::uint8_t* out) {
  std::uint32_t sw[4];
  q3k_unpack_scales(blk->scales, sw);
  const __m128i s8 = _mm_sub_epi8(_mm_setr_epi32(static_cast<int>(sw[0]), static_cast<int>(sw[1]), static_cast<int>(sw[2]),
                                                 static_cast<int>(sw[3])),
                                  _mm_set1_epi8(32));
  const __m512i sc4 = _mm512_broadcast_i32x4(s8);
  const __m512i hm = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->hmask)));
  for (int z = 0; z < 4; ++z) {
    // Byte e of step z is element 64z + e (sub-block 4z + e / 16), as in the per-column kernel.
    const __m512i bits = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk->qs + 32 * (z / 2))));
    const __m512i low = _mm512_and_si512(
        _mm512_srlv_epi64(bits, z % 2 ? _mm512_setr_epi64(4, 4, 4, 4, 6, 6, 6, 6) : _mm512_setr_epi64(0, 0, 0, 0, 2, 2, 2, 2)),
        _mm512_set1_epi8(3));
    const __m512i hsh = _mm512_setr_epi64(2 * z, 2 * z, 2 * z, 2 * z, 2 * z + 1, 2 * z + 1, 2 * z + 1, 2 * z + 1);
    const __m512i high = _mm512_and_si512(_mm512_slli_epi64(_mm512_srlv_epi64(hm, hsh), 2), _mm512_set1_epi8(4));
    const __m512i code = _mm512_sub_epi8(_mm512_or_si512(low, high), _mm512_set1_epi8(4));  // -4..3
    const __m512i sb = pair_step_scales(sc4, z);
    const __m512i bias = _mm512_set1_epi16(124);
    for (int h = 0; h < 2; ++h) {
      const __m256i c = h ? _mm512_extracti64x4_epi64(code, 1) : _mm512_castsi512_si256(code);
      const __m256i s = h ? _mm512_extracti64x4_epi64(sb, 1) : _mm512_castsi512_si256(sb);
      const __m512i u = _mm512_add_epi16(_mm512_mullo_epi16(_mm512_cvtepi8_epi16(c), _mm512_cvtepi8_epi16(s)), bias);
      _mm256_store_si256(reinterpret_cast<__m256i*>(out + 64 * z + 32 * h), _mm512_cvtepi16_epi8(u));
    }
  }
  const float dw = fp16[blk->d];
  std::memcpy(out + 256, &dw, 4);
}

// The block's steps for PairBatchTile: the expanded bytes are code x scale + 124 (unsigned for
// vpdpbusd), so the sums start from the pair layout's -124 x (lane sums of x) (kLaneBias).
struct Q3KPairSteps {
  static constexpr std::int64_t kExpandedBytes = kQ3KExpandedBytes;
  struct Row {
    __m512 dw;
  };
  GRAFT_TARGET_AVX512 static Row load_row(const std::uint8_t* e) {
    return {_mm512_set1_ps(*reinterpret_cast<const float*>(e + 256))};
  }
  GRAFT_TARGET_AVX512 static __m512 step(const Row& row, const __m512i wq[8], const std::int8_t* pb, __m512 acc) {
    const __m512i sum = pair_lane_sums(wq, pb, _mm512_load_si512(pb + Q8KActivations::kPairLaneSumsAt));
    const __m512 dxv = _mm512_load_ps(reinterpret_cast<const float*>(pb + Q8KActivations::kPairScalesAt));
    return _mm512_fmadd_ps(_mm512_mul_ps(dxv, row.dw), _mm512_cvtepi32_ps(sum), acc);
  }
};

struct Q3KAvx512Batch : PairBatchTile<Q3KPairSteps> {
  static void expand(const GemmArgs& a, std::int64_t row, std::int64_t b, std::uint8_t* out) {
    expand_q3k_block(reinterpret_cast<const block_q3_k*>(a.w + row * a.w_stride + b * sizeof(block_q3_k)), a.fp16, out);
  }

  static constexpr int kRows = 4, kColumns = 8;
  static constexpr std::int64_t kBlockElems = kQK_K, kExpandedBytes = kQ3KExpandedBytes;
};

}  // namespace

void q3_k_gemm_avx512(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  if (c1 - c0 == 1) walk_tiles<Q3KAvx512, 4, 1>(a, r0, r1, c0, c1);
  else pair_batch<Q3KAvx512Batch, Q3KAvx512>(a, r0, r1, c0, c1);
}

}  // namespace graft::quant
#endif
