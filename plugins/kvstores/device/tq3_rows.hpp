// tq3: graft's 3-bit KV cache blocks, for rows already rotated by rotation.hpp. After an orthonormal
// rotation the elements of a head's row are close to independent Gaussians, so one fixed codebook
// serves every block: the 8-level Lloyd-Max quantizer of a unit Gaussian (TurboQuant, arXiv
// 2504.19874, uses the same idea with 128-element blocks; ours are 32 elements, like ggml's, so
// head sizes of 64 work and the attention kernels share the q8_0/q4_0 block loop). A block is an
// fp16 scale, the 32 magnitudes' 2-bit codes and the 32 signs: 14 bytes, 3.5 bits per element.
// Element j is kTq3Levels[code | sign << 2] * d.
#pragma once

#include <cmath>
#include <cstdint>

#include "half.hpp"

namespace graft::kv {

inline constexpr int kQKTq3 = 32;  // elements per block

struct block_tq3 {
  std::uint16_t d;                // fp16 scale
  std::uint8_t qs[kQKTq3 / 4];    // element j's magnitude code: (qs[j / 4] >> 2 (j % 4)) & 3
  std::uint8_t qh[kQKTq3 / 8];    // element j's sign (1: negative): (qh[j / 8] >> (j % 8)) & 1
};
static_assert(sizeof(block_tq3) == 14);

// The Lloyd-Max reconstruction levels of N(0, 1) with 8 levels (Max, 1960): magnitude codes 0-3,
// then the same negated; an all-zero block decodes to +0.
inline constexpr float kTq3Levels[8] = {0.2451f, 0.7560f, 1.3440f, 2.1520f, -0.2451f, -0.7560f, -1.3440f, -2.1520f};
// The decision thresholds between magnitude codes (midpoints of the levels).
inline constexpr float kTq3Bounds[3] = {0.5006f, 1.0500f, 1.7480f};

// Element j's level index (0-7).
inline std::uint32_t tq3_index(const block_tq3& b, int j) noexcept {
  return ((b.qs[j / 4] >> (2 * (j % 4))) & 3u) | (((b.qh[j / 8] >> (j % 8)) & 1u) << 2);
}

// Passes of the quantizer: codes for a scale, then the best scale for the codes (Lloyd's
// alternation); the third pass lowers the squared error on Gaussian rows by 8% from the first
// (0.0307 to 0.0283 of the energy), later ones by under 1% more.
inline constexpr int kTq3Passes = 3;

// k: a multiple of 32. The first pass picks each element's code against the block's root mean
// square (the codebook's unit); each pass then sets the least-squares scale for its codes,
// sum(x r) / sum(r r), and the next picks the codes again against that scale. A zero block gets
// scale 0.
inline void quantize_row_tq3(const float* x, block_tq3* y, std::int64_t k) noexcept {
  for (std::int64_t i = 0; i < k / kQKTq3; ++i, x += kQKTq3) {
    block_tq3& b = y[i];
    double ss = 0.0;
    for (int j = 0; j < kQKTq3; ++j) ss += static_cast<double>(x[j]) * x[j];
    double unit = std::sqrt(ss / kQKTq3);
    if (!(unit > 0.0)) {  // zero (or NaN) block
      b = block_tq3{f32_to_f16(unit == 0.0 ? 0.0f : static_cast<float>(unit)), {}, {}};
      continue;
    }
    for (int pass = 0; pass < kTq3Passes; ++pass) {
      for (auto& q : b.qs) q = 0;
      for (auto& q : b.qh) q = 0;
      double xr = 0.0, rr = 0.0;
      for (int j = 0; j < kQKTq3; ++j) {
        const double a = std::fabs(x[j]) / unit;
        const std::uint32_t code = a < kTq3Bounds[0] ? 0 : a < kTq3Bounds[1] ? 1 : a < kTq3Bounds[2] ? 2 : 3;
        const std::uint32_t sign = x[j] < 0.0f;
        b.qs[j / 4] = static_cast<std::uint8_t>(b.qs[j / 4] | code << (2 * (j % 4)));
        b.qh[j / 8] = static_cast<std::uint8_t>(b.qh[j / 8] | sign << (j % 8));
        const double r = kTq3Levels[code | sign << 2];
        xr += x[j] * r;
        rr += r * r;
      }
      unit = xr / rr;  // > 0: every code's level has the sign of its element
    }
    b.d = f32_to_f16(static_cast<float>(unit));
  }
}

// The values the attention kernels compute from a block: level * scale, one rounding each.
inline void dequantize_row_tq3(const block_tq3* x, float* y, std::int64_t k) noexcept {
  for (std::int64_t i = 0; i < k / kQKTq3; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQKTq3; ++j) y[i * kQKTq3 + j] = kTq3Levels[tq3_index(x[i], j)] * d;
  }
}

}  // namespace graft::kv
