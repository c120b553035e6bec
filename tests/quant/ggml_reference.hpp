// An independent, deliberately plain re-implementation of what the plugins must match: ggml's
// conversions and reference quantizers (ggml-impl.h, ggml-quants.c), ggml's x86 activation
// quantizer (ggml-cpu/arch/x86/quants.c quantize_row_q8_0), and the documented per-output order
// of operations of our kernels (docs/formats.md). Written differently from the plugin code (double
// arithmetic, frexp/nearbyint) so a shared mistake is unlikely.
#pragma once

#include <bit>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace quant_ref {

inline std::uint16_t fp32_to_fp16(float f) {
  const std::uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  if (std::isnan(f)) return sign | 0x7E00;
  const double a = std::fabs(static_cast<double>(f));
  if (a >= 65520.0) return sign | 0x7C00;
  if (a < 0x1p-14) return static_cast<std::uint16_t>(sign | static_cast<int>(std::nearbyint(a * 0x1p24)));
  int e = 0;
  const double m = std::frexp(a, &e);          // a = m * 2^e, m in [0.5, 1)
  double q = std::nearbyint(m * 2048.0);        // 11 significant bits, ties to even
  int biased = e - 1 + 15;
  if (q == 2048.0) {
    q = 1024.0;
    ++biased;
  }
  return static_cast<std::uint16_t>(sign | (biased << 10) | (static_cast<int>(q) - 1024));
}

inline float fp16_to_fp32(std::uint16_t h) {
  const double sign = (h & 0x8000) ? -1.0 : 1.0;
  const int e = (h >> 10) & 31, m = h & 1023;
  if (e == 31) return m ? std::nanf("") : static_cast<float>(sign * INFINITY);
  if (e == 0) return static_cast<float>(sign * std::ldexp(m, -24));
  return static_cast<float>(sign * std::ldexp(1024 + m, e - 25));
}

inline float bf16_to_fp32(std::uint16_t h) { return std::bit_cast<float>(static_cast<std::uint32_t>(h) << 16); }

inline std::uint16_t fp32_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if (std::isnan(f)) return static_cast<std::uint16_t>((x >> 16) | 0x40);
  std::uint16_t h = static_cast<std::uint16_t>(x >> 16);  // truncation toward zero in magnitude
  if (std::isinf(f)) return h;
  const double v = std::fabs(static_cast<double>(f));
  const double below = std::fabs(static_cast<double>(bf16_to_fp32(h)));
  const double above = (h & 0x7FFF) == 0x7F7F ? 0x1p128 : std::fabs(static_cast<double>(bf16_to_fp32(h + 1)));
  const double d_below = v - below, d_above = above - v;
  if (d_above < d_below || (d_above == d_below && (h & 1))) ++h;
  return h;
}

// quantize_row_q8_0_ref: 34-byte blocks.
inline std::vector<std::uint8_t> quantize_q8_0(const float* x, std::int64_t k) {
  std::vector<std::uint8_t> out;
  for (std::int64_t b = 0; b < k / 32; ++b) {
    const float* v = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float d = amax / 127.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t dh = fp32_to_fp16(d);
    out.push_back(static_cast<std::uint8_t>(dh & 0xFF));
    out.push_back(static_cast<std::uint8_t>(dh >> 8));
    for (int j = 0; j < 32; ++j) out.push_back(static_cast<std::uint8_t>(static_cast<int>(std::roundf(v[j] * id))));
  }
  return out;
}

// quantize_row_q4_0_ref: 18-byte blocks.
inline std::vector<std::uint8_t> quantize_q4_0(const float* x, std::int64_t k) {
  std::vector<std::uint8_t> out;
  for (std::int64_t b = 0; b < k / 32; ++b) {
    const float* v = x + b * 32;
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < 32; ++j)
      if (std::fabs(v[j]) > amax) {
        amax = std::fabs(v[j]);
        max = v[j];
      }
    const float d = max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t dh = fp32_to_fp16(d);
    out.push_back(static_cast<std::uint8_t>(dh & 0xFF));
    out.push_back(static_cast<std::uint8_t>(dh >> 8));
    auto code = [&](float t) {
      int q = static_cast<int>(std::trunc(t * id + 8.5f));
      return q > 15 ? 15 : q;
    };
    for (int j = 0; j < 16; ++j) out.push_back(static_cast<std::uint8_t>(code(v[j]) | (code(v[j + 16]) << 4)));
  }
  return out;
}

// One block's scale and its 32 signed quants, decoded from either layout.
struct Block {
  float d;
  int q[32];
};

inline Block q8_0_block(const std::uint8_t* p) {
  Block b{fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))), {}};
  for (int j = 0; j < 32; ++j) b.q[j] = static_cast<std::int8_t>(p[2 + j]);
  return b;
}

inline Block q4_0_block(const std::uint8_t* p) {
  Block b{fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))), {}};
  for (int j = 0; j < 16; ++j) {
    b.q[j] = (p[2 + j] & 15) - 8;
    b.q[j + 16] = (p[2 + j] >> 4) - 8;
  }
  return b;
}

// ggml's x86 quantize_row_q8_0 (activations): id = 127 / amax, round half to even.
inline std::vector<Block> quantize_activation(const float* x, std::int64_t k) {
  std::vector<Block> out;
  for (std::int64_t b = 0; b < k / 32; ++b) {
    const float* v = x + b * 32;
    float amax = 0.0f;
    for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    Block blk{fp16_to_fp32(fp32_to_fp16(amax / 127.0f)), {}};
    const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
    for (int j = 0; j < 32; ++j) blk.q[j] = static_cast<int>(std::nearbyintf(v[j] * id));
    out.push_back(blk);
  }
  return out;
}

// The documented output of a Q8_0/Q4_0 kernel: 8 lanes (block elements 4l .. 4l+3) each
// accumulating fma(float(exact integer lane sum), d_w * d_x, acc) block by block, then a fixed tree.
inline float quantized_dot(const std::vector<Block>& w, const std::vector<Block>& x) {
  float lane[8] = {};
  for (std::size_t b = 0; b < w.size(); ++b) {
    const float s = w[b].d * x[b].d;
    for (int l = 0; l < 8; ++l) {
      long p = 0;
      for (int j = 4 * l; j < 4 * l + 4; ++j) p += static_cast<long>(w[b].q[j]) * x[b].q[j];
      lane[l] = std::fma(static_cast<float>(p), s, lane[l]);
    }
  }
  for (int half = 4; half >= 1; half /= 2)
    for (int l = 0; l < half; ++l) lane[l] = lane[l] + lane[l + half];
  return lane[0];
}

// The documented output of a dense kernel: 16 fused multiply-add lanes (zero padded), then a
// fixed tree.
inline float lane_dot(const float* w, const float* x, std::int64_t k) {
  float lane[16] = {};
  for (std::int64_t i = 0; i < (k + 15) / 16 * 16; ++i)
    lane[i % 16] = std::fma(i < k ? w[i] : 0.0f, i < k ? x[i] : 0.0f, lane[i % 16]);
  for (int w8 = 8; w8 >= 1; w8 /= 2)
    for (int l = 0; l < w8; ++l) lane[l] = lane[l] + lane[l + w8];
  return lane[0];
}

}  // namespace quant_ref
