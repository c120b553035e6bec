// The x86 form of the quantized kernels (256-bit vectors), shared by Q8_0 and Q4_0 at the AVX2
// and AVX-512 levels. Include once per translation unit after defining GRAFT_QGEMM_TARGET as that
// level's target attribute; the weight policy W supplies, with the same attribute:
//   W::kBlockBytes, W::kCols (columns per tile), W::Prep, W::load(block) -> Prep (once per weight
//   block, shared by the tile's columns) and W::dot(prep, x, lane_offsets) -> 8 exact int32 lane
//   sums P[l] over block elements 4l .. 4l+3.
// Each output lane accumulates acc = fma(float(P), d_w * d_x, acc) in block order; the lanes are
// folded by x86::hsum8 at the end. That is exactly the scalar definition (qgemm_scalar.hpp).
#pragma once

#include <cstdint>
#include <cstring>

#include "driver/gemm.hpp"
#include "simd/x86_simd.hpp"

#ifndef GRAFT_QGEMM_TARGET
#error "define GRAFT_QGEMM_TARGET before including qgemm_x86.hpp"
#endif

namespace graft::quant {
namespace {

template <class W>
struct X86QGemm {
  template <int R, int C>
  GRAFT_QGEMM_TARGET static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / 32;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    const std::int8_t* xq[C];
    const std::int32_t* off[C];
    const float* dx[C];
    _Pragma("GCC unroll 8")
    for (int j = 0; j < C; ++j) {
      xq[j] = a.xq->block_qs(c + j, 0);
      off[j] = a.xq->offsets(c + j, 0);
      dx[j] = a.xq->scales(c + j);
    }
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < nb; ++b) {
      typename W::Prep wp[R];
      __m256 dw[R];
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = w[i] + b * W::kBlockBytes;
        // The next tile's rows start right after these: fetching them now keeps enough misses in
        // flight for one core to stream at memory speed (short rows defeat the hardware prefetcher).
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);
        std::uint16_t h;
        std::memcpy(&h, blk, 2);
        dw[i] = _mm256_broadcast_ss(a.fp16 + h);  // table lookup: a load, no shuffle
        wp[i] = W::load(blk + 2);
      }
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) {
        const __m256i x = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq[j] + b * 32));
        const __m256i o = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(off[j] + b * 8));
        const __m256 dxb = _mm256_broadcast_ss(dx[j] + b);
        _Pragma("GCC unroll 8")
        for (int i = 0; i < R; ++i) {
          const __m256 s = _mm256_mul_ps(dw[i], dxb);
          const __m256 p = _mm256_cvtepi32_ps(W::dot(wp[i], x, o));
          acc[i][j] = _mm256_fmadd_ps(p, s, acc[i][j]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

template <class W>
void x86_qgemm(const GemmArgs& a, std::int64_t r0, std::int64_t r1, std::int64_t c0, std::int64_t c1) {
  walk_tiles<X86QGemm<W>, 4, W::kCols>(a, r0, r1, c0, c1);
}

}  // namespace
}  // namespace graft::quant
