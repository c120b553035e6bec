// AVX-512 tiles for batches (n >= 2): two activation columns share one 512-bit register, lanes 0..7
// for column c and 8..15 for column c + 1 (Q8Activations' interleaved pairs), so the f32 lane work
// (convert, scale, accumulate) runs on 16 lanes per instruction. Each lane sees exactly the operations of the 256-bit kernel, so
// results are bit-identical to it (and to the scalar definition). Odd columns fall back to the
// 256-bit tile. Include after qgemm_x86.hpp in an AVX-512 translation unit; the weight policy adds
//   W::load512(block) -> the block's prepared weights in both 256-bit halves,
//   W::dot512(w, x_pair, offsets_pair) -> 16 int32 lane sums.
#pragma once

#include "families/legacy/qgemm_x86.hpp"

namespace graft::quant {
namespace {

template <class W>
struct Avx512QGemm {
  template <int R, int C>
  GRAFT_TARGET_AVX512 static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    if constexpr (C % 2 != 0) {
      X86QGemm<W>::template tile<R, C>(a, r, c);
    } else {
      constexpr int P = C / 2;
      const std::int64_t nb = a.k / 32;
      const std::uint8_t* w[R];
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
      // Pair pointers hoisted out of the block loop: scalar address work competes with the vector
      // ports. Tiles of even width start at even columns, so column c + 2p is pair (c / 2 + p).
      const std::int8_t* xp[P];
      const std::int32_t* op[P];
      const float* dp[P];
      _Pragma("GCC unroll 8")
      for (int p = 0; p < P; ++p) {
        const std::int64_t pair = c / 2 + p;
        xp[p] = a.xq->pair_qs.data() + pair * nb * 64;
        op[p] = a.xq->pair_offsets.data() + pair * nb * 16;
        dp[p] = a.xq->pair_scales.data() + pair * nb * 16;
      }
      __m512 acc[R][P];
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i)
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) acc[i][p] = _mm512_setzero_ps();
      for (std::int64_t b = 0; b < nb; ++b) {
        typename W::Prep512 wp[R];
        __m512 dw[R];
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          const std::uint8_t* blk = w[i] + b * W::kBlockBytes;
          _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);  // next tile
          std::uint16_t h;
          std::memcpy(&h, blk, 2);
          dw[i] = _mm512_set1_ps(a.fp16[h]);
          wp[i] = W::load512(blk + 2);
        }
        _Pragma("GCC unroll 8")
        for (int p = 0; p < P; ++p) {
          const __m512i x = _mm512_loadu_si512(xp[p] + b * 64);
          const __m512 dx = _mm512_loadu_ps(dp[p] + b * 16);
          _Pragma("GCC unroll 8")
          for (int i = 0; i < R; ++i) {
            const __m512 s = _mm512_mul_ps(dw[i], dx);
            const __m512i o = _mm512_loadu_si512(op[p] + b * 16);  // dpbusd accumulates into it
            const __m512 q = _mm512_cvtepi32_ps(W::dot512(wp[i], x, o));
            acc[i][p] = _mm512_fmadd_ps(q, s, acc[i][p]);
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
  }
};

template <class W>
void avx512_qgemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<Avx512QGemm<W>, 4, 8>(a, r0, r1, c0, c1);
}

}  // namespace
}  // namespace graft::quant
