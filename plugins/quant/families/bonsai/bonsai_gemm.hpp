// The computation every Q1_0 and Q2_0 kernel performs (scalar, AVX2 and AVX-512 alike), shared by
// the two formats. A weight row of k elements is cut into sub-blocks g = 0 .. k/32 - 1 of 32, one
// per Q8_0 activation block. Each sub-block is split into kLanesPerSub parts: part h holds the
// elements e with (e / 4) % kLanesPerSub == h. Sixteen f32 lanes accumulate, per output:
//
//   for each sub-block g in order:
//     s = d_w[block of g] * d_x[g]                                    (f32 multiply)
//     for each part h: L = kLanesPerSub * (g % (16 / kLanesPerSub)) + h
//                      acc[L] = fma(float(P[g][h]), s, acc[L])
//     P[g][h] = exact integer sum of code * x_q over part h           (code: +-1, or q - 1)
//   y = acc folded by the tree acc[l] + acc[l + 8], then 4 apart, 2 apart, 1 apart
//
// Q1_0 uses one part per sub-block (lane = g % 16), Q2_0 two (lane = 2 * (g % 8) + h). This is
// not ggml's AVX2 vec_dot order (a chain over the sub-blocks of each block in 8 lanes of 4
// elements), which costs a convert and an FMA per 8 products per (row, column): for 1- and 2-bit
// weights that f32 work, not memory, would bound both decode and prefill. Here the integer sums
// run over whole (half) sub-blocks, so the f32 work is 2 operations per 32 (Q1_0) or 16 (Q2_0)
// products, and the AVX-512 kernel gets the sums straight from VNNI with no horizontal adds
// (bonsai_gemm_avx512.hpp). Results differ from ggml's only in rounding order.
#pragma once

#include <cmath>
#include <cstdint>

namespace graft::quant::bonsai {

inline constexpr int kLanes = 16;
// Weight blocks per pass of the AVX-512 kernel (both formats: 72 bytes, 16 lanes).
inline constexpr int kSpanBlocks = 4;

// Lane of part h of sub-block g.
template <int kLanesPerSub>
constexpr int lane(std::int64_t g, int h) {
  return kLanesPerSub * static_cast<int>(g % (kLanes / kLanesPerSub)) + h;
}

// The fixed folding tree (destroys v).
inline float fold16(float* v) {
  for (int w = kLanes / 2; w >= 1; w /= 2)
    for (int l = 0; l < w; ++l) v[l] = v[l] + v[l + w];
  return v[0];
}

}  // namespace graft::quant::bonsai
