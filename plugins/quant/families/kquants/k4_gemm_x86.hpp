// The Q4_K and Q5_K tiles for AVX2 and AVX-512 (the scalar definition's f32 order; Bits = 4 or 5
// code bits). Include once per translation unit after defining GRAFT_Q4K_TARGET (the level's
// target attribute) and GRAFT_Q4K_AVX512 (0 or 1). AVX-512: each weight block is decoded once per
// tile into vectors (codes as bytes in element order, each sub-block's scale in the int16 lanes its
// products land in); tiles of 4 rows: paired_tile; leftover single rows: 256-bit f32 lanes per
// output, a one-column tile using the decoded block straight from registers. AVX2: step_tile, one
// sub-block at a time.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>

#include "driver/gemm.hpp"
#include "families/kquants/k4_layout.hpp"
#include "families/kquants/k4_rows_x86.hpp"
#include "simd/x86_simd.hpp"

#if !defined(GRAFT_Q4K_TARGET) || !defined(GRAFT_Q4K_AVX512)
#error "define GRAFT_Q4K_TARGET and GRAFT_Q4K_AVX512 before including k4_gemm_x86.hpp"
#endif

namespace graft::quant {
namespace {

#if GRAFT_Q4K_AVX512
constexpr int kVecs = 4;  // 64 codes (two sub-blocks) per vector
using VecI = __m512i;
// pshufb controls picking int16 scale 2j (low 256 bits) and 2j + 1 (high 256 bits) out of the 8
// scales repeated in every 128-bit lane.
constexpr auto kScaleShuffle = [] {
  std::array<std::uint8_t, 4 * 64> t{};
  for (int j = 0; j < 4; ++j)
    for (int b = 0; b < 64; ++b) t[static_cast<std::size_t>(64 * j + b)] = static_cast<std::uint8_t>(4 * j + (b >= 32 ? 2 : 0) + (b & 1));
  return t;
}();
#else
constexpr int kVecs = 8;  // 32 codes (one sub-block) per vector
using VecI = __m256i;
#endif

struct K4Decoded {
  VecI q[kVecs];
  VecI sc[kVecs];
  __m128i mins;  // 8 int16
  float d, ndmin;  // fp16 d and -dmin
};

// The block's 8 6-bit sub-block scales and mins (12 bytes at blk + 4) as 8 int16 each.
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) void unpack_scales_mins(const std::uint8_t* blk, __m128i& sc16,
                                                                                __m128i& mins) {
  std::uint32_t u[3];
  std::memcpy(u, blk + 4, 12);
  const std::uint32_t sc_lo = u[0] & 0x3F3F3F3Fu;
  const std::uint32_t sc_hi = (u[2] & 0x0F0F0F0Fu) | (((u[0] >> 6) & 0x03030303u) << 4);
  const std::uint32_t m_lo = u[1] & 0x3F3F3F3Fu;
  const std::uint32_t m_hi = ((u[2] >> 4) & 0x0F0F0F0Fu) | (((u[1] >> 6) & 0x03030303u) << 4);
  sc16 = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(sc_hi), static_cast<int>(sc_lo)));
  mins = _mm_cvtepu8_epi16(_mm_set_epi32(0, 0, static_cast<int>(m_hi), static_cast<int>(m_lo)));
}

// unpack_scales_mins in vector registers, for the AVX2 batch tiles (where the general-register
// form and its moves cost a tenth of the tile's time in L1). Words u0, u1, u2 of the 12 bytes give
// scales 0-3 = u0 & 0x3F, 4-7 = (u2 & 0x0F) | ((u0 >> 6) & 3) << 4, mins 0-3 = u1 & 0x3F,
// 4-7 = (u2 >> 4 & 0x0F) | ((u1 >> 6) & 3) << 4, bytewise (ggml's get_scale_min_k4). Decode keeps
// the general-register form: with this one the model's Q4_K decode was slower although the tile
// ran faster in L1 (docs/benchmarks_avx2.md).
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) void unpack_scales_mins_vec(const std::uint8_t* blk, __m128i& sc16,
                                                                                __m128i& mins) {
  // From the block's start: blocks are 144 bytes, so a row 16-byte aligned (file tensors are 32-)
  // never splits this load over two cache lines, where blk + 4 would one block in four.
  const __m128i v = _mm_srli_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(blk)), 4);
  const __m128i a = _mm_shuffle_epi32(v, _MM_SHUFFLE(2, 1, 2, 0));  // u0 | u2 | u1 | u2
  const __m128i b = _mm_shuffle_epi32(v, _MM_SHUFFLE(1, 1, 0, 0));  // . | u0 | . | u1
  const __m128i low = _mm_and_si128(_mm_srlv_epi32(a, _mm_setr_epi32(0, 0, 0, 4)),
                                    _mm_setr_epi32(0x3F3F3F3F, 0x0F0F0F0F, 0x3F3F3F3F, 0x0F0F0F0F));
  // (u >> 2) & 0x30 in each byte is its top two bits at bits 4-5.
  const __m128i high = _mm_and_si128(_mm_srli_epi32(b, 2), _mm_setr_epi32(0, 0x30303030, 0, 0x30303030));
  const __m128i r = _mm_or_si128(low, high);  // scales 0-7 | mins 0-7, bytes
  sc16 = _mm_cvtepu8_epi16(r);
  mins = _mm_cvtepu8_epi16(_mm_unpackhi_epi64(r, r));
}

// Block b of C activation columns: their quants, the sums of their 8 sub-blocks of 32
// ([bs0 + bs1, bs2 + bs3, ...]) and their scale.
// kSums32: the sums as the activations carry them (Q8KActivations::sums32) rather than added here.
template <int C, bool kSums32 = false>
struct K4Columns {
  const std::int8_t* x[C];
  __m128i sums[C];
  __m256 dx[C];
  GRAFT_Q4K_TARGET inline __attribute__((always_inline)) K4Columns(const GemmArgs& a, std::int64_t c, std::int64_t b) {
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) {
      x[j] = a.xk->block_qs(c + j, b);
      if constexpr (kSums32) {
        sums[j] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(a.xk->block_sums32(c + j, b)));
      } else {
        const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
        sums[j] = _mm_hadd_epi16(_mm256_castsi256_si128(bs), _mm256_extracti128_si256(bs, 1));
      }
      dx[j] = _mm256_set1_ps(a.xk->scale(c + j, b));
    }
  }
};

template <int Bits>
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) void decode(const std::uint8_t* blk, const float* fp16,
                                                                    K4Decoded& p) {
  std::uint16_t h[2];
  std::memcpy(h, blk, 4);
  p.d = fp16[h[0]];
  p.ndmin = -fp16[h[1]];
  __m128i sc16;
  unpack_scales_mins(blk, sc16, p.mins);
  const std::uint8_t* qs = blk + K4Layout<Bits>::kQsOffset;
#if GRAFT_Q4K_AVX512
  const __m512i sc4 = _mm512_broadcast_i32x4(sc16);
  const __m512i shift = _mm512_setr_epi64(0, 0, 0, 0, 4, 4, 4, 4);
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j) {
    p.sc[j] = _mm512_shuffle_epi8(sc4, _mm512_loadu_si512(kScaleShuffle.data() + 64 * j));
    // [low nibbles | high nibbles] of 32 bytes = elements 64j .. 64j + 63 in order.
    const __m512i both = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j)));
    p.q[j] = _mm512_and_si512(_mm512_srlv_epi64(both, shift), _mm512_set1_epi8(0x0F));
    if constexpr (Bits == 5) {
      // Bit 2j (low half) or 2j + 1 (high half) of qh[l] is the top bit of the element's code:
      // rotating each 64-bit lane left by 4 - bit puts it at bit 4 of the same byte.
      const __m512i hb = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + K4Layout<Bits>::kQhOffset)));
      const __m512i rot = _mm512_setr_epi64((4 - 2 * j) & 63, (4 - 2 * j) & 63, (4 - 2 * j) & 63, (4 - 2 * j) & 63,
                                            (3 - 2 * j) & 63, (3 - 2 * j) & 63, (3 - 2 * j) & 63, (3 - 2 * j) & 63);
      p.q[j] = _mm512_or_si512(p.q[j], _mm512_and_si512(_mm512_rolv_epi64(hb, rot), _mm512_set1_epi8(0x10)));
    }
  }
#else
  const __m256i sc2 = _mm256_broadcastsi128_si256(sc16);
  _Pragma("GCC unroll 8")
  for (int j = 0; j < 8; ++j)
    p.sc[j] = _mm256_shuffle_epi8(sc2, _mm256_set1_epi16(static_cast<short>((2 * j) | ((2 * j + 1) << 8))));
  const __m256i low = _mm256_set1_epi8(0x0F);
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j) {
    const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * j));
    p.q[2 * j] = _mm256_and_si256(v, low);
    p.q[2 * j + 1] = _mm256_and_si256(_mm256_srli_epi16(v, 4), low);
    if constexpr (Bits == 5) {
      // Bit k = 2j (+1) of qh[l] is the top bit of the code: moved to bit 4 of the same byte.
      const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + K4Layout<Bits>::kQhOffset));
      const __m256i top = _mm256_set1_epi8(0x10);
      const __m256i h0 = 2 * j <= 4 ? _mm256_slli_epi16(hb, 4 - 2 * j) : _mm256_srli_epi16(hb, 2 * j - 4);
      const __m256i h1 = 2 * j + 1 <= 4 ? _mm256_slli_epi16(hb, 3 - 2 * j) : _mm256_srli_epi16(hb, 2 * j - 3);
      p.q[2 * j] = _mm256_or_si256(p.q[2 * j], _mm256_and_si256(h0, top));
      p.q[2 * j + 1] = _mm256_or_si256(p.q[2 * j + 1], _mm256_and_si256(h1, top));
    }
  }
#endif
}

// The mins' integer terms: Q4_K keeps 4 lanes M[i] (pairs of sub-blocks, as ggml's Q4_K dot);
// Q5_K one total in every lane (ggml's Q5_K dot sums them before its single f32 accumulator).
template <int Bits>
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) __m128i min_sums(__m128i mins, __m128i sums) {
  __m128i m = _mm_madd_epi16(mins, sums);
  if constexpr (Bits == 5) {
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0x4E));
    m = _mm_add_epi32(m, _mm_shuffle_epi32(m, 0xB1));
  }
  return m;
}

// min_sums of two columns at once, [column 2p's | column 2p + 1's] (Q5_K's shuffles stay within
// 128-bit lanes, so each half is min_sums of its column).
template <int Bits>
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) __m256i min_sums2(__m256i mins2, __m256i sums2) {
  __m256i m = _mm256_madd_epi16(mins2, sums2);
  if constexpr (Bits == 5) {
    m = _mm256_add_epi32(m, _mm256_shuffle_epi32(m, 0x4E));
    m = _mm256_add_epi32(m, _mm256_shuffle_epi32(m, 0xB1));
  }
  return m;
}

#if GRAFT_Q4K_AVX512
// Before the fold: lanes l and l + 8 together make S[l].
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) __m512i block_dot512(const K4Decoded& p, const std::int8_t* x) {
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j)
    s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(p.q[j], _mm512_loadu_si512(x + 64 * j)), p.sc[j]);
  return s;
}
#endif

// The 8 exact lane sums S[l] of the definition.
GRAFT_Q4K_TARGET inline __attribute__((always_inline)) __m256i block_dot(const K4Decoded& p, const std::int8_t* x) {
#if GRAFT_Q4K_AVX512
  __m512i s = _mm512_setzero_si512();
  _Pragma("GCC unroll 4")
  for (int j = 0; j < 4; ++j)
    s = _mm512_dpwssd_epi32(s, _mm512_maddubs_epi16(p.q[j], _mm512_loadu_si512(x + 64 * j)), p.sc[j]);
  return _mm256_add_epi32(_mm512_castsi512_si256(s), _mm512_extracti64x4_epi64(s, 1));
#else
  __m256i s = _mm256_setzero_si256();
  _Pragma("GCC unroll 8")
  for (int j = 0; j < 8; ++j) {
    const __m256i prod = _mm256_maddubs_epi16(p.q[j], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + 32 * j)));
    s = _mm256_add_epi32(s, _mm256_madd_epi16(prod, p.sc[j]));
  }
  return s;
#endif
}

#if GRAFT_Q4K_AVX512
// AVX-512 tiles of 4 rows (any column count): the f32 lane work of two rows shares one 512-bit
// register (rows 2h and 2h + 1 in the low and high halves) and the mins of all four rows another
// (one 128-bit lane per row), so the per-output f32 work runs 16 lanes wide. Every lane sees
// exactly the operations of the 256-bit form, so the bits are those of the scalar definition.
// [lo | hi] with AVX-512F only (the f32x8 forms need AVX512DQ, not in our target).
GRAFT_Q4K_TARGET inline __m512 join(__m256 lo, __m256 hi) {
  return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castpd256_pd512(_mm256_castps_pd(lo)), _mm256_castps_pd(hi), 1));
}

template <int Bits, int C>
GRAFT_Q4K_TARGET void paired_tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
  const std::int64_t nb = a.k / kQK_K;
  __m512 acc[2][C];  // rows 2h (low half) and 2h + 1 (high half)
  __m512 accm[C];    // row i in 128-bit lane i
  _Pragma("GCC unroll 8")
  for (int j = 0; j < C; ++j) {
    acc[0][j] = acc[1][j] = accm[j] = _mm512_setzero_ps();
  }
  for (std::int64_t b = 0; b < nb; ++b) {
    K4Decoded p[4];
    const std::int8_t* x[C];
    __m512 dx[C];
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) {
      x[j] = a.xk->block_qs(c + j, b);
      dx[j] = _mm512_set1_ps(a.xk->scale(c + j, b));
    }
    // Rows 2h and 2h + 1 against column j.
    auto pair = [&](int h, int j) GRAFT_Q4K_TARGET {
      const __m512i f = x86::fold_pair(block_dot512(p[2 * h], x[j]), block_dot512(p[2 * h + 1], x[j]));
      const __m512 dw = join(_mm256_set1_ps(p[2 * h].d), _mm256_set1_ps(p[2 * h + 1].d));
      acc[h][j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(f), _mm512_mul_ps(dw, dx[j]), acc[h][j]);
    };
    _Pragma("GCC unroll 4")
    for (int i = 0; i < 4; ++i) {
      const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * static_cast<std::int64_t>(K4Layout<Bits>::kBlockBytes);
      const char* next = reinterpret_cast<const char*>(blk + 4 * a.w_stride);
      _mm_prefetch(next, _MM_HINT_T0);
      _mm_prefetch(next + 64, _MM_HINT_T0);
      _mm_prefetch(next + K4Layout<Bits>::kBlockBytes - 1, _MM_HINT_T0);
      decode<Bits>(blk, a.fp16, p[i]);
      // One column: each pair is used as soon as it is decoded, so no decoded block leaves registers.
      if constexpr (C == 1) {
        if (i % 2 == 1) pair(i / 2, 0);
      }
    }
    if constexpr (C > 1) {
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        pair(0, j);
        pair(1, j);
      }
    }
    const __m512 ndmin = _mm512_setr_ps(p[0].ndmin, p[0].ndmin, p[0].ndmin, p[0].ndmin, p[1].ndmin, p[1].ndmin,
                                        p[1].ndmin, p[1].ndmin, p[2].ndmin, p[2].ndmin, p[2].ndmin, p[2].ndmin,
                                        p[3].ndmin, p[3].ndmin, p[3].ndmin, p[3].ndmin);
    __m512i mins = _mm512_castsi128_si512(p[0].mins);
    mins = _mm512_inserti32x4(mins, p[1].mins, 1);
    mins = _mm512_inserti32x4(mins, p[2].mins, 2);
    mins = _mm512_inserti32x4(mins, p[3].mins, 3);
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) {
      const __m512i mm = four_row_min_terms<Bits>(mins, a.xk->block_bsums(c + j, b));
      accm[j] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(mm), _mm512_mul_ps(ndmin, dx[j]), accm[j]);
    }
  }
  _Pragma("GCC unroll 8")
  for (int j = 0; j < C; ++j) {
    const __m512 pair_acc[2] = {acc[0][j], acc[1][j]};
    store_four_rows<Bits>(pair_acc, accm[j], a.y + (c + j) * a.y_stride + r, 4);
  }
}
#endif

#if !GRAFT_Q4K_AVX512
// AVX2 tiles: a row's codes and scale vectors are made one 32-element sub-block at a time and
// serve every column of the tile at once (a decoded block of 16 vectors per row does not fit the
// 16 registers: 4 x 4 tiles of decoded blocks spilled them all and were load-bound). Decode runs
// 4 x 1, batches 2 x 4.
template <int Bits, int R, int C>
GRAFT_Q4K_TARGET void step_tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
  const std::int64_t nb = a.k / kQK_K;
  // Column pairs (even C): two columns' 4 mins lanes side by side in one register, whose lanes
  // are the same operations as two 128-bit ones.
  constexpr int P = C % 2 == 0 ? C / 2 : 1;
  __m256 acc[R][C];
  __m128 accm[R][C];
  __m256 accm2[R][P];
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i) {
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) {
      acc[i][j] = _mm256_setzero_ps();
      accm[i][j] = _mm_setzero_ps();
    }
    _Pragma("GCC unroll 8")
    for (int p = 0; p < P; ++p) accm2[i][p] = _mm256_setzero_ps();
  }
  const __m256i low = _mm256_set1_epi8(0x0F);
  for (std::int64_t b = 0; b < nb; ++b) {
    const K4Columns<C, (C > 1)> col(a, c, b);
    __m256i sums2[P];
    __m256 dx2[P];
    if constexpr (C % 2 == 0) {
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p) {
        sums2[p] = _mm256_set_m128i(col.sums[2 * p + 1], col.sums[2 * p]);
        dx2[p] = _mm256_set_m128(_mm256_castps256_ps128(col.dx[2 * p + 1]), _mm256_castps256_ps128(col.dx[2 * p]));
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) {
      const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * static_cast<std::int64_t>(K4Layout<Bits>::kBlockBytes);
      const char* ahead = x86::tile_stream_ahead(a.w, a.w_stride, r, R, b, i, K4Layout<Bits>::kBlockBytes);
      _Pragma("GCC unroll 4")
      for (std::size_t o = 0; o < K4Layout<Bits>::kBlockBytes; o += 64) _mm_prefetch(ahead + o, _MM_HINT_T1);
      std::uint16_t h[2];
      std::memcpy(h, blk, 4);
      const float d = a.fp16[h[0]], ndmin = -a.fp16[h[1]];
      __m128i sc16, mins;
      if constexpr (C > 1)
        unpack_scales_mins_vec(blk, sc16, mins);
      else
        unpack_scales_mins(blk, sc16, mins);
      const __m256i sc2 = _mm256_broadcastsi128_si256(sc16);
      const std::uint8_t* qs = blk + K4Layout<Bits>::kQsOffset;
      __m256i sum[C];
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) sum[j] = _mm256_setzero_si256();
      _Pragma("GCC unroll 8")
      for (int t = 0; t < 8; ++t) {  // sub-block t: nibbles (t % 2) of qs[32 (t / 2) ..]
        const __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(qs + 32 * (t / 2)));
        __m256i q = _mm256_and_si256(t % 2 ? _mm256_srli_epi16(v, 4) : v, low);
        if constexpr (Bits == 5) {
          // Bit t of qh[l] is the top bit of the code: moved to bit 4 of the same byte.
          const __m256i hb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + K4Layout<Bits>::kQhOffset));
          const __m256i top = t <= 4 ? _mm256_slli_epi16(hb, 4 - t) : _mm256_srli_epi16(hb, t - 4);
          q = _mm256_or_si256(q, _mm256_and_si256(top, _mm256_set1_epi8(0x10)));
        }
        const __m256i sc = _mm256_shuffle_epi8(sc2, _mm256_set1_epi16(static_cast<short>((2 * t) | ((2 * t + 1) << 8))));
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const __m256i prod = _mm256_maddubs_epi16(q, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(col.x[j] + 32 * t)));
          sum[j] = _mm256_add_epi32(sum[j], _mm256_madd_epi16(prod, sc));
          asm("" : "+x"(sum[j]));  // a running sum: GCC's adder tree over all products spills them
        }
      }
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j)
        acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(sum[j]), _mm256_mul_ps(_mm256_set1_ps(d), col.dx[j]), acc[i][j]);
      if constexpr (C % 2 == 0) {
        const __m256i mins2 = _mm256_broadcastsi128_si256(mins);
        const __m256 nd = _mm256_set1_ps(ndmin);
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p)
          accm2[i][p] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(min_sums2<Bits>(mins2, sums2[p])), _mm256_mul_ps(nd, dx2[p]),
                                        accm2[i][p]);
      } else {
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const __m128 dmin = _mm_mul_ps(_mm_set1_ps(ndmin), _mm256_castps256_ps128(col.dx[j]));
          accm[i][j] = _mm_fmadd_ps(_mm_cvtepi32_ps(min_sums<Bits>(mins, col.sums[j])), dmin, accm[i][j]);
        }
      }
    }
  }
  if constexpr (C % 2 == 0) {
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p) {
        accm[i][2 * p] = _mm256_castps256_ps128(accm2[i][p]);
        accm[i][2 * p + 1] = _mm256_extractf128_ps(accm2[i][p], 1);
      }
  }
  _Pragma("GCC unroll 8")
  for (int i = 0; i < R; ++i)
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]) + min_total<Bits>(accm[i][j]);
}
#endif

template <int Bits>
struct X86K4 {
  template <int R, int C>
  GRAFT_Q4K_TARGET static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
#if !GRAFT_Q4K_AVX512
    step_tile<Bits, R, C>(a, r, c);
#else
    if constexpr (R == 4) {
      paired_tile<Bits, C>(a, r, c);
      return;
    }
    // Rows left over from the 4-row tiles.
    const std::int64_t nb = a.k / kQK_K;
    __m256 acc[R][C];
    __m128 accm[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        acc[i][j] = _mm256_setzero_ps();
        accm[i][j] = _mm_setzero_ps();
      }
    // One row's contribution of block b to column j.
    auto accumulate = [&](const K4Decoded& p, int i, int j, const std::int8_t* x, __m128i sums, __m256 dx)
                          GRAFT_Q4K_TARGET {
      const __m256 d = _mm256_mul_ps(_mm256_set1_ps(p.d), dx);
      acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(block_dot(p, x)), d, acc[i][j]);
      const __m128 dmin = _mm_mul_ps(_mm_set1_ps(p.ndmin), _mm256_castps256_ps128(dx));
      accm[i][j] = _mm_fmadd_ps(_mm_cvtepi32_ps(min_sums<Bits>(p.mins, sums)), dmin, accm[i][j]);
    };
    for (std::int64_t b = 0; b < nb; ++b) {
      const K4Columns<C> col(a, c, b);
      const auto& x = col.x;
      const auto& sums = col.sums;
      const auto& dx = col.dx;
      auto row_block = [&](int i) {
        const std::uint8_t* blk = a.w + (r + i) * a.w_stride + b * static_cast<std::int64_t>(K4Layout<Bits>::kBlockBytes);
        // The next tile's rows: keeps enough misses in flight for one core to stream at memory speed.
        const char* next = reinterpret_cast<const char*>(blk + R * a.w_stride);
        _mm_prefetch(next, _MM_HINT_T0);
        _mm_prefetch(next + 64, _MM_HINT_T0);
        _mm_prefetch(next + K4Layout<Bits>::kBlockBytes - 1, _MM_HINT_T0);
        return blk;
      };
      if constexpr (C == 1) {
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          K4Decoded p;
          decode<Bits>(row_block(i), a.fp16, p);
          accumulate(p, i, 0, x[0], sums[0], dx[0]);
        }
      } else {
        K4Decoded p[R];
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) decode<Bits>(row_block(i), a.fp16, p[i]);
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j)
          _Pragma("GCC unroll 8")
          for (int i = 0; i < R; ++i) accumulate(p[i], i, j, x[j], sums[j], dx[j]);
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]) + min_total<Bits>(accm[i][j]);
      }
#endif
  }
};

}  // namespace
}  // namespace graft::quant
