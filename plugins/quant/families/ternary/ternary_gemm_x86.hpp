// The 256-bit TQ1_0/TQ2_0 kernel body, shared by their AVX2 kernels and TQ1_0's AVX-512 one: each
// row's block is expanded once into 8 x 32 codes (0..2) by the weight policy W, then per column
// the level's lane-sum policy L gives ggml's 8 exact lane sums, sum(c * x) - (bsum[2l] + bsum[2l+1])
// = sum((c - 1) * x), and each lane takes acc = fma(float(sum), d_x * d_w, acc); hsum8 at the end.
// Include once per translation unit after defining GRAFT_TERNARY_TARGET as that level's target
// attribute. W: kBlockBytes, kScaleOffset (its fp16 scale), codes(block, __m256i[8]).
// L: sums(codes, x quants, bsums) -> __m256i.
#pragma once

#include <cstdint>

#include "driver/gemm.hpp"
#include "simd/x86_simd.hpp"

#ifndef GRAFT_TERNARY_TARGET
#error "define GRAFT_TERNARY_TARGET before including ternary_gemm_x86.hpp"
#endif

namespace graft::quant {
namespace {

// AVX2: maddubs pairs accumulated in int16 (|sum| <= 8 * 508: no overflow), widened by madd.
struct TernaryMaddubsSums {
  GRAFT_TERNARY_TARGET static __m256i sums(const __m256i q[8], const std::int8_t* xq, __m256i bs) {
    __m256i p16 = _mm256_setzero_si256();
    _Pragma("GCC unroll 8")
    for (int v = 0; v < 8; ++v)
      p16 = _mm256_add_epi16(p16, _mm256_maddubs_epi16(q[v], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * v))));
    return _mm256_add_epi32(_mm256_madd_epi16(p16, _mm256_set1_epi16(1)), _mm256_madd_epi16(bs, _mm256_set1_epi16(-1)));
  }
};

// VNNI: vpdpbusd onto lanes that start from the bsum correction.
struct TernaryVnniSums {
  GRAFT_TERNARY_TARGET static __m256i sums(const __m256i q[8], const std::int8_t* xq, __m256i bs) {
    __m256i s = _mm256_madd_epi16(bs, _mm256_set1_epi16(-1));
    _Pragma("GCC unroll 8")
    for (int v = 0; v < 8; ++v) s = _mm256_dpbusd_epi32(s, q[v], _mm256_loadu_si256(reinterpret_cast<const __m256i*>(xq + 32 * v)));
    return s;
  }
};

template <class W, class L>
struct TernaryX86Gemm {
  template <int R, int C>
  GRAFT_TERNARY_TARGET static void tile(const GemmArgs& a, std::int64_t r, std::int64_t c) {
    const std::int64_t nb = a.k / 256;
    const std::uint8_t* w[R];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i) w[i] = a.w + (r + i) * a.w_stride;
    __m256 acc[R][C];
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) acc[i][j] = _mm256_setzero_ps();
    for (std::int64_t b = 0; b < nb; ++b) {
      _Pragma("GCC unroll 8")
      for (int i = 0; i < R; ++i) {
        const std::uint8_t* blk = w[i] + b * W::kBlockBytes;
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride), _MM_HINT_T0);
        _mm_prefetch(reinterpret_cast<const char*>(blk + R * a.w_stride + W::kBlockBytes - 1), _MM_HINT_T0);
        __m256i q[8];
        W::codes(blk, q);
        const float dw = a.fp16[blk[W::kScaleOffset] | (blk[W::kScaleOffset + 1] << 8)];
        _Pragma("GCC unroll 8")
        for (int j = 0; j < C; ++j) {
          const __m256i bs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(a.xk->block_bsums(c + j, b)));
          const __m256i s = L::sums(q, a.xk->block_qs(c + j, b), bs);
          const __m256 d = _mm256_set1_ps(a.xk->scale(c + j, b) * dw);
          acc[i][j] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), d, acc[i][j]);
        }
      }
    }
    _Pragma("GCC unroll 8")
    for (int i = 0; i < R; ++i)
      _Pragma("GCC unroll 8")
      for (int j = 0; j < C; ++j) a.y[(c + j) * a.y_stride + r + i] = x86::hsum8(acc[i][j]);
  }
};

}  // namespace
}  // namespace graft::quant
