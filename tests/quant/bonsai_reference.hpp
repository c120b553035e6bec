// Plain re-implementations for the Q1_0/Q2_0 tests: ggml's reference quantizers
// (quantize_row_q1_0_ref / quantize_row_q2_0_ref in ggml-quants.c), the block decoders, and the
// documented per-output sequence of the kernels (plugins/quant/families/bonsai/bonsai_gemm.hpp), written
// over whole-row code arrays rather than blocks so a mistake shared with the plugin is unlikely.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "ggml_reference.hpp"

namespace bonsai_ref {

inline void put_half(std::vector<std::uint8_t>& out, float d) {
  const std::uint16_t h = quant_ref::fp32_to_fp16(d);
  out.push_back(static_cast<std::uint8_t>(h & 0xFF));
  out.push_back(static_cast<std::uint8_t>(h >> 8));
}

// quantize_row_q1_0_ref: d = (f32 running sum of |x|) / 128, bit j set when x >= 0.
inline std::vector<std::uint8_t> quantize_q1_0(const float* x, std::int64_t k) {
  std::vector<std::uint8_t> out;
  for (std::int64_t b = 0; b < k / 128; ++b) {
    const float* v = x + b * 128;
    float sum = 0.0f;
    for (int j = 0; j < 128; ++j) sum = sum + std::fabs(v[j]);
    put_half(out, sum / 128.0f);
    for (int byte = 0; byte < 16; ++byte) {
      int bits = 0;
      for (int t = 0; t < 8; ++t) bits |= (v[8 * byte + t] >= 0.0f ? 1 : 0) << t;
      out.push_back(static_cast<std::uint8_t>(bits));
    }
  }
  return out;
}

// quantize_row_q2_0_ref: d = max |x|, id = 1 / d (f32), q = clamp(roundf(x * id) + 1, 0, 3).
inline std::vector<std::uint8_t> quantize_q2_0(const float* x, std::int64_t k) {
  std::vector<std::uint8_t> out;
  for (std::int64_t b = 0; b < k / 64; ++b) {
    const float* v = x + b * 64;
    float amax = 0.0f;
    for (int j = 0; j < 64; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float id = amax > 0.0f ? 1.0f / amax : 0.0f;
    put_half(out, amax);
    for (int byte = 0; byte < 16; ++byte) {
      int packed = 0;
      for (int t = 0; t < 4; ++t) {
        const float scaled = v[4 * byte + t] * id;                          // f32 product, as ggml
        const double r = std::round(static_cast<double>(scaled));           // = roundf: ties away from 0
        const int q = static_cast<int>(std::fmin(3.0, std::fmax(0.0, r + 1.0)));
        packed |= q << (2 * t);
      }
      out.push_back(static_cast<std::uint8_t>(packed));
    }
  }
  return out;
}

// A row's signed codes and per-block scales, from either layout.
struct Row {
  std::vector<int> code;   // k entries
  std::vector<float> d;    // one per block
  int block = 0;           // elements per block
};

inline Row decode_row(bool q1, const std::uint8_t* p, std::int64_t k) {
  Row r;
  r.block = q1 ? 128 : 64;
  for (std::int64_t b = 0; b < k / r.block; ++b, p += 18) {
    r.d.push_back(quant_ref::fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))));
    for (int j = 0; j < r.block; ++j) {
      if (q1) r.code.push_back((p[2 + j / 8] >> (j % 8)) & 1 ? 1 : -1);
      else r.code.push_back(((p[2 + j / 4] >> (2 * (j % 4))) & 3) - 1);
    }
  }
  return r;
}

// The documented kernel output: 16 lanes; sub-block g, part h (elements with (e / 4) % parts == h)
// goes to lane parts * (g % (16 / parts)) + h as fma(float(exact sum), d_w * d_x, lane); then
// the fold lane[l] + lane[l + 8], + 4, + 2, + 1.
inline float canonical_dot(const Row& w, const std::vector<quant_ref::Block>& x, int parts) {
  float lane[16] = {};
  for (std::size_t g = 0; g < x.size(); ++g) {
    const float s = w.d[g * 32 / static_cast<std::size_t>(w.block)] * x[g].d;
    for (int h = 0; h < parts; ++h) {
      long sum = 0;
      for (int e = 0; e < 32; ++e)
        if ((e / 4) % parts == h) sum += static_cast<long>(w.code[g * 32 + static_cast<std::size_t>(e)]) * x[g].q[e];
      const std::size_t l = static_cast<std::size_t>(parts) * (g % static_cast<std::size_t>(16 / parts)) + static_cast<std::size_t>(h);
      lane[l] = std::fma(static_cast<float>(sum), s, lane[l]);
    }
  }
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l) lane[l] = lane[l] + lane[l + width];
  return lane[0];
}

}  // namespace bonsai_ref
