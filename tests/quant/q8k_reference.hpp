// An independent, deliberately plain statement of what the Q8_K-activation formats (Q2_K, ...)
// must compute: ggml's dequantize_row_* formulas, ggml's quantize_row_q8_K_ref for activations,
// and the per-output f32 operation order each format documents in its *_gemm.hpp. Decodes the
// blocks from bytes by their documented element formulas (docs/formats_kquants.md), not by the plugin code.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ggml_reference.hpp"

namespace q8k_ref {

struct Activation {  // one Q8_K block of 256
  float d = 0;
  int q[256] = {};
  int bsum[16] = {};
};

inline std::vector<Activation> quantize_activation(const float* x, std::int64_t k) {
  std::vector<Activation> out(static_cast<std::size_t>(k / 256));
  for (std::size_t b = 0; b < out.size(); ++b) {
    const float* v = x + b * 256;
    int arg = 0;
    for (int j = 1; j < 256; ++j)
      if (std::fabs(v[j]) > std::fabs(v[arg])) arg = j;
    if (v[arg] == 0.0f) continue;
    const float iscale = -127.0f / v[arg];
    for (int j = 0; j < 256; ++j) {
      out[b].q[j] = static_cast<int>(std::fmin(std::nearbyint(iscale * v[j]), 127.0f));
      out[b].bsum[j / 16] += out[b].q[j];
    }
    out[b].d = 1.0f / iscale;
  }
  return out;
}

inline float fold8(const float* acc) {
  return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

inline float half(const std::uint8_t* p) { return quant_ref::fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))); }

// ---- Q2_K (84 bytes: scales[16], qs[64], d, dmin) ----
struct Q2K {
  int code[256];
  int sc[16], m[16];
  float d, dmin;
};

inline Q2K q2_k_block(const std::uint8_t* p) {
  Q2K b{};
  for (int j = 0; j < 16; ++j) {
    b.sc[j] = p[j] % 16;
    b.m[j] = p[j] / 16;
  }
  // Element 128h + 32s + i is bit pair s of byte 32h + i.
  for (int h = 0; h < 2; ++h)
    for (int s = 0; s < 4; ++s)
      for (int i = 0; i < 32; ++i) b.code[128 * h + 32 * s + i] = (p[16 + 32 * h + i] / (1 << (2 * s))) % 4;
  b.d = half(p + 80);
  b.dmin = half(p + 82);
  return b;
}

inline float q2_k_value(const Q2K& b, int e) {
  const float dl = b.d * static_cast<float>(b.sc[e / 16]), ml = b.dmin * static_cast<float>(b.m[e / 16]);
  return dl * static_cast<float>(b.code[e]) - ml;
}

// |d * sc * q| + |dmin * m|: the size of the terms the kernel sums before they cancel.
inline double q2_k_magnitude(const Q2K& b, int e) {
  return std::fabs(static_cast<double>(b.d) * b.sc[e / 16] * b.code[e]) + std::fabs(static_cast<double>(b.dmin) * b.m[e / 16]);
}

inline float q2_k_dot(const std::vector<Q2K>& w, const std::vector<Activation>& x) {
  float acc[8] = {};
  for (std::size_t b = 0; b < w.size(); ++b) {
    for (int l = 0; l < 8; ++l) {
      long mins = 0, sum = 0;
      for (int t = 2 * l; t <= 2 * l + 1; ++t) mins += static_cast<long>(w[b].m[t]) * x[b].bsum[t];
      for (int v = 0; v < 8; ++v)
        for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; ++e)
          sum += static_cast<long>(w[b].sc[2 * v + l / 4]) * w[b].code[e] * x[b].q[e];
      acc[l] = std::fma(-x[b].d * w[b].dmin, static_cast<float>(mins), acc[l]);
      acc[l] = std::fma(x[b].d * w[b].d, static_cast<float>(sum), acc[l]);
    }
  }
  return fold8(acc);
}

// ---- Q3_K (110 bytes: hmask[32], qs[64], scales[12], d) ----
struct Q3K {
  int code[256];  // -4..3
  int sc[16];     // -32..31
  float d;
};

inline Q3K q3_k_block(const std::uint8_t* p) {
  Q3K b{};
  const std::uint8_t* s = p + 96;
  // formats.md: for i < 4, scales i, 4+i, 8+i, 12+i from bytes i, 4+i (low / high nibbles) and 8+i.
  for (int i = 0; i < 4; ++i) {
    b.sc[i] = (s[i] & 15) | ((s[8 + i] & 3) << 4);
    b.sc[4 + i] = (s[4 + i] & 15) | (((s[8 + i] >> 2) & 3) << 4);
    b.sc[8 + i] = (s[i] >> 4) | (((s[8 + i] >> 4) & 3) << 4);
    b.sc[12 + i] = (s[4 + i] >> 4) | (((s[8 + i] >> 6) & 3) << 4);
  }
  for (auto& v : b.sc) v -= 32;
  // Loop order as Q2_K, with a high-bit mask that moves one bit per 32 elements.
  for (int e = 0; e < 256; ++e) {
    const int low = (p[32 + 32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
    const bool high = (p[e % 32] >> (e / 32)) & 1;
    b.code[e] = low - (high ? 0 : 4);
  }
  b.d = half(p + 108);
  return b;
}

inline float q3_k_value(const Q3K& b, int e) {
  return (b.d * static_cast<float>(b.sc[e / 16])) * static_cast<float>(b.code[e]);
}

inline float q3_k_dot(const std::vector<Q3K>& w, const std::vector<Activation>& x) {
  float acc[8] = {};
  for (std::size_t b = 0; b < w.size(); ++b)
    for (int l = 0; l < 8; ++l) {
      long sum = 0;
      for (int v = 0; v < 8; ++v)
        for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; ++e)
          sum += static_cast<long>(w[b].sc[2 * v + l / 4]) * w[b].code[e] * x[b].q[e];
      acc[l] = std::fma(x[b].d * w[b].d, static_cast<float>(sum), acc[l]);
    }
  return fold8(acc);
}

// ---- TQ2_0 (66 bytes: qs[64], d) and TQ1_0 (54 bytes: qs[48], qh[4], d): codes 0..2 ----
struct Ternary {
  int code[256];
  float d;
};

// formats.md: element 4j + 32l + m (j in {0, 32}) is bits 2l of qs[j + m].
inline Ternary tq2_0_block(const std::uint8_t* p) {
  Ternary b{};
  for (int j = 0; j < 64; j += 32)
    for (int l = 0; l < 4; ++l)
      for (int m = 0; m < 32; ++m) b.code[4 * j + 32 * l + m] = (p[j + m] >> (2 * l)) & 3;
  b.d = half(p + 64);
  return b;
}

// Trit n of byte q: ((uint8)(q * 3^n) * 3) >> 8, in dequantize_row_tq1_0's output order.
inline Ternary tq1_0_block(const std::uint8_t* p) {
  Ternary b{};
  auto trit = [](int byte, int n) {
    int q = byte;
    for (int i = 0; i < n; ++i) q = (q * 3) % 256;
    return (q * 3) / 256;
  };
  int e = 0;
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 32; ++m) b.code[e++] = trit(p[m], n);
  for (int n = 0; n < 5; ++n)
    for (int m = 0; m < 16; ++m) b.code[e++] = trit(p[32 + m], n);
  for (int n = 0; n < 4; ++n)
    for (int j = 0; j < 4; ++j) b.code[e++] = trit(p[48 + j], n);
  b.d = half(p + 52);
  return b;
}

inline float ternary_value(const Ternary& b, int e) { return static_cast<float>(b.code[e] - 1) * b.d; }

inline float ternary_dot(const std::vector<Ternary>& w, const std::vector<Activation>& x) {
  float acc[8] = {};
  for (std::size_t b = 0; b < w.size(); ++b)
    for (int l = 0; l < 8; ++l) {
      long sum = -static_cast<long>(x[b].bsum[2 * l]) - x[b].bsum[2 * l + 1];
      for (int v = 0; v < 8; ++v)
        for (int e = 32 * v + 4 * l; e < 32 * v + 4 * l + 4; ++e) sum += static_cast<long>(w[b].code[e]) * x[b].q[e];
      acc[l] = std::fma(static_cast<float>(sum), x[b].d * w[b].d, acc[l]);
    }
  return fold8(acc);
}

// quantize_row_tq2_0_ref / quantize_row_tq1_0_ref, stated from ggml-quants.c.
inline std::vector<std::uint8_t> quantize_ternary(const std::string& f, const float* x, std::int64_t k) {
  std::vector<std::uint8_t> out;
  for (std::int64_t b = 0; b < k / 256; ++b) {
    const float* v = x + b * 256;
    float amax = 0;
    for (int j = 0; j < 256; ++j) amax = std::fmax(amax, std::fabs(v[j]));
    const float id = amax != 0 ? 1.0f / amax : 0.0f;
    auto c = [&](int e) { return static_cast<int>(std::lroundf(v[e] * id)) + 1; };
    const std::uint16_t dh = quant_ref::fp32_to_fp16(amax);
    if (f == "tq2_0") {
      for (int j = 0; j < 2; ++j)
        for (int m = 0; m < 32; ++m) {
          int q = 0;
          for (int n = 0; n < 4; ++n) q += c(128 * j + 32 * n + m) << (2 * n);
          out.push_back(static_cast<std::uint8_t>(q));
        }
    } else {
      auto pack = [](int q) { return static_cast<std::uint8_t>((q * 256 + 242) / 243); };
      for (int m = 0; m < 32; ++m) {
        int q = 0;
        for (int n = 0; n < 5; ++n) q = q * 3 + c(32 * n + m);
        out.push_back(pack(q));
      }
      for (int m = 0; m < 16; ++m) {
        int q = 0;
        for (int n = 0; n < 5; ++n) q = q * 3 + c(160 + 16 * n + m);
        out.push_back(pack(q));
      }
      for (int j = 0; j < 4; ++j) {
        int q = 0;
        for (int n = 0; n < 4; ++n) q = q * 3 + c(240 + 4 * n + j);
        out.push_back(pack(q * 3));
      }
    }
    out.push_back(static_cast<std::uint8_t>(dh & 0xFF));
    out.push_back(static_cast<std::uint8_t>(dh >> 8));
  }
  return out;
}

// ---- dispatch by format name ----
inline std::size_t block_bytes(const std::string& f) {
  if (f == "q2_k") return 84;
  if (f == "q3_k") return 110;
  if (f == "tq2_0") return 66;
  if (f == "tq1_0") return 54;
  return 0;
}

// The exact kernel outputs y[c * m + r] for m weight rows (row_bytes apart) and n activation rows.
inline std::vector<float> matmul(const std::string& f, const std::uint8_t* w, std::size_t row_bytes, std::int64_t k,
                                 std::int64_t m, const float* x, std::int64_t n) {
  std::vector<std::vector<Activation>> xa;
  for (std::int64_t c = 0; c < n; ++c) xa.push_back(quantize_activation(x + c * k, k));
  std::vector<float> y(static_cast<std::size_t>(m * n));
  for (std::int64_t r = 0; r < m; ++r) {
    const std::uint8_t* row = w + static_cast<std::size_t>(r) * row_bytes;
    if (f == "q2_k") {
      std::vector<Q2K> blocks;
      for (std::int64_t b = 0; b < k / 256; ++b) blocks.push_back(q2_k_block(row + b * 84));
      for (std::int64_t c = 0; c < n; ++c) y[static_cast<std::size_t>(c * m + r)] = q2_k_dot(blocks, xa[static_cast<std::size_t>(c)]);
    } else if (f == "q3_k") {
      std::vector<Q3K> blocks;
      for (std::int64_t b = 0; b < k / 256; ++b) blocks.push_back(q3_k_block(row + b * 110));
      for (std::int64_t c = 0; c < n; ++c) y[static_cast<std::size_t>(c * m + r)] = q3_k_dot(blocks, xa[static_cast<std::size_t>(c)]);
    } else if (f == "tq2_0" || f == "tq1_0") {
      std::vector<Ternary> blocks;
      for (std::int64_t b = 0; b < k / 256; ++b)
        blocks.push_back(f == "tq2_0" ? tq2_0_block(row + b * 66) : tq1_0_block(row + b * 54));
      for (std::int64_t c = 0; c < n; ++c) y[static_cast<std::size_t>(c * m + r)] = ternary_dot(blocks, xa[static_cast<std::size_t>(c)]);
    } else {
      for (auto& v : y) v = NAN;
    }
  }
  return y;
}

// Dequantized row (ggml's formula) and per-element term magnitudes.
inline void decode_row(const std::string& f, const std::uint8_t* row, std::int64_t k, float* y, double* mag) {
  for (std::int64_t b = 0; b < k / 256; ++b) {
    if (f == "q2_k") {
      const Q2K blk = q2_k_block(row + b * 84);
      for (int e = 0; e < 256; ++e) {
        y[b * 256 + e] = q2_k_value(blk, e);
        mag[b * 256 + e] = q2_k_magnitude(blk, e);
      }
    } else if (f == "q3_k") {
      const Q3K blk = q3_k_block(row + b * 110);
      for (int e = 0; e < 256; ++e) {
        y[b * 256 + e] = q3_k_value(blk, e);
        mag[b * 256 + e] = std::fabs(static_cast<double>(y[b * 256 + e]));
      }
    } else if (f == "tq2_0" || f == "tq1_0") {
      const Ternary blk = f == "tq2_0" ? tq2_0_block(row + b * 66) : tq1_0_block(row + b * 54);
      for (int e = 0; e < 256; ++e) {
        y[b * 256 + e] = ternary_value(blk, e);
        // The kernel sums c * x and the bsums separately: terms up to (3 + 1) |d| |x|.
        mag[b * 256 + e] = 4.0 * std::fabs(static_cast<double>(blk.d));
      }
    }
  }
}

}  // namespace q8k_ref
