// Independent, plain statements of what the K-quant plugins must match: ggml's dequantize_row_q4_K
// / _q5_K / _q6_K (ggml-quants.c), quantize_row_q8_K_ref for the activations, the documented per-output
// operation order of our kernels (plugins/quant/families/kquants/q4_k_gemm.hpp, q6_k_gemm.hpp), and the
// per-block optimum the quantizers are measured against. Written from the ggml sources' text, not
// from the plugin code (byte-level field access, no shared helpers).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "ggml_reference.hpp"

namespace kquant_ref {

using quant_ref::fp16_to_fp32;
using quant_ref::fp32_to_fp16;

inline std::uint16_t half_at(const std::uint8_t* p) { return static_cast<std::uint16_t>(p[0] | (p[1] << 8)); }

// ggml's get_scale_min_k4, as written there.
inline void scale_min_k4(int j, const std::uint8_t* q, int& d, int& m) {
  if (j < 4) {
    d = q[j] & 63;
    m = q[j + 4] & 63;
  } else {
    d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
    m = (q[j + 4] >> 4) | ((q[j - 0] >> 6) << 4);
  }
}

// One decoded Q4_K super-block: unsigned codes in element order, the 6-bit scales and mins.
struct Q4KBlock {
  float d, dmin;
  int sc[8], m[8];
  int q[256];
};

inline Q4KBlock q4_k_block(const std::uint8_t* p) {
  Q4KBlock b{};
  b.d = fp16_to_fp32(half_at(p));
  b.dmin = fp16_to_fp32(half_at(p + 2));
  for (int j = 0; j < 8; ++j) scale_min_k4(j, p + 4, b.sc[j], b.m[j]);
  for (int e = 0; e < 256; ++e) {
    const std::uint8_t byte = p[16 + (e / 64) * 32 + e % 32];
    b.q[e] = (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
  }
  return b;
}

// dequantize_row_q4_K: y = (d * sc) * q - (dmin * m), f32 with a rounding after each operation.
inline void dequantize_q4_k(const std::uint8_t* p, std::int64_t k, float* y) {
  for (std::int64_t i = 0; i < k / 256; ++i, p += 144) {
    const Q4KBlock b = q4_k_block(p);
    for (int e = 0; e < 256; ++e) {
      const float d1 = b.d * static_cast<float>(b.sc[e / 32]);
      const float m1 = b.dmin * static_cast<float>(b.m[e / 32]);
      const float prod = d1 * static_cast<float>(b.q[e]);
      y[i * 256 + e] = prod - m1;
    }
  }
}

// block_q5_K: d, dmin, scales[12] as Q4_K, qh[32] (bit j of qh[l]: 16s bit of element 32j + l),
// qs[128] as Q4_K's.
inline Q4KBlock q5_k_block(const std::uint8_t* p) {
  Q4KBlock b{};
  b.d = fp16_to_fp32(half_at(p));
  b.dmin = fp16_to_fp32(half_at(p + 2));
  for (int j = 0; j < 8; ++j) scale_min_k4(j, p + 4, b.sc[j], b.m[j]);
  for (int e = 0; e < 256; ++e) {
    const std::uint8_t byte = p[48 + (e / 64) * 32 + e % 32];
    const int lo = (e % 64) < 32 ? (byte & 0xF) : (byte >> 4);
    const int hi = (p[16 + e % 32] >> (e / 32)) & 1;
    b.q[e] = lo + (hi ? 16 : 0);
  }
  return b;
}

// dequantize_row_q5_K: y = (d * sc) * q - (dmin * m).
inline void dequantize_q5_k(const std::uint8_t* p, std::int64_t k, float* y) {
  for (std::int64_t i = 0; i < k / 256; ++i, p += 176) {
    const Q4KBlock b = q5_k_block(p);
    for (int e = 0; e < 256; ++e) {
      const float d1 = b.d * static_cast<float>(b.sc[e / 32]);
      const float m1 = b.dmin * static_cast<float>(b.m[e / 32]);
      const float prod = d1 * static_cast<float>(b.q[e]);
      y[i * 256 + e] = prod - m1;
    }
  }
}

// One decoded Q6_K super-block: signed codes (-32..31) in element order, int8 scales per 16.
struct Q6KBlock {
  float d;
  int sc[16];
  int q[256];
};

// block_q6_K: ql[128], qh[64], scales[16], d. Within each half of 128 (n = 0, 1), element
// 32 * t + l (t = 0..3, l = 0..31) has its low 4 bits in ql[64n + l + 32 * (t & 1)] (low nibble for
// t < 2, high for t >= 2) and its top 2 bits in qh[32n + l] bits 2t, 2t + 1.
inline Q6KBlock q6_k_block(const std::uint8_t* p) {
  Q6KBlock b{};
  const std::uint8_t* ql = p;
  const std::uint8_t* qh = p + 128;
  for (int j = 0; j < 16; ++j) b.sc[j] = static_cast<std::int8_t>(p[192 + j]);
  b.d = fp16_to_fp32(half_at(p + 208));
  for (int e = 0; e < 256; ++e) {
    const int n = e / 128, t = (e % 128) / 32, l = e % 32;
    const std::uint8_t lo_byte = ql[64 * n + l + 32 * (t & 1)];
    const int lo = t < 2 ? (lo_byte & 0xF) : (lo_byte >> 4);
    const int hi = (qh[32 * n + l] >> (2 * t)) & 3;
    b.q[e] = (lo | (hi << 4)) - 32;
  }
  return b;
}

// dequantize_row_q6_K: y = (d * sc) * q.
inline void dequantize_q6_k(const std::uint8_t* p, std::int64_t k, float* y) {
  for (std::int64_t i = 0; i < k / 256; ++i, p += 210) {
    const Q6KBlock b = q6_k_block(p);
    for (int e = 0; e < 256; ++e) {
      const float ds = b.d * static_cast<float>(b.sc[e / 16]);
      y[i * 256 + e] = ds * static_cast<float>(b.q[e]);
    }
  }
}

// quantize_row_q8_K_ref: per 256, iscale = -127 / (value of largest magnitude, first on ties),
// q = min(127, round-half-even(iscale * x)), d = 1 / iscale, sums per 16.
struct Q8KRow {
  std::vector<float> d;
  std::vector<int> q;
  std::vector<int> bsums;
};

inline Q8KRow quantize_q8_k(const float* x, std::int64_t k) {
  Q8KRow r;
  r.q.assign(static_cast<std::size_t>(k), 0);
  r.bsums.assign(static_cast<std::size_t>(k / 16), 0);
  for (std::int64_t b = 0; b < k / 256; ++b) {
    const float* v = x + b * 256;
    int arg = 0;
    for (int j = 1; j < 256; ++j)
      if (std::fabs(v[j]) > std::fabs(v[arg])) arg = j;
    if (v[arg] == 0.0f) {
      r.d.push_back(0.0f);
      continue;
    }
    const float iscale = -127.0f / v[arg];
    for (int j = 0; j < 256; ++j) {
      const int q = static_cast<int>(std::fmin(std::nearbyint(iscale * v[j]), 127.0f));
      r.q[static_cast<std::size_t>(b * 256 + j)] = q;
      r.bsums[static_cast<std::size_t>(b * 16 + j / 16)] += q;
    }
    r.d.push_back(1.0f / iscale);
  }
  return r;
}

inline float hsum8(const float* v) { return ((v[0] + v[4]) + (v[2] + v[6])) + ((v[1] + v[5]) + (v[3] + v[7])); }

// The documented Q4_K output (q4_k_gemm.hpp).
inline float q4_k_dot(const std::uint8_t* w, const Q8KRow& x, std::int64_t k) {
  float acc[8] = {}, accm[4] = {};
  for (std::int64_t b = 0; b < k / 256; ++b) {
    const Q4KBlock wb = q4_k_block(w + b * 144);
    const int* xq = x.q.data() + b * 256;
    const int* bs = x.bsums.data() + b * 16;
    long s[8] = {};
    for (int e = 0; e < 256; ++e) s[(e % 32) / 4] += static_cast<long>(wb.sc[e / 32]) * wb.q[e] * xq[e];
    long mm[4] = {};
    for (int j = 0; j < 8; ++j) mm[j / 2] += static_cast<long>(wb.m[j]) * (bs[2 * j] + bs[2 * j + 1]);
    const float dx = x.d[static_cast<std::size_t>(b)];
    const float d = dx * wb.d, dmin = -(dx * wb.dmin);
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(s[l]), d, acc[l]);
    for (int i = 0; i < 4; ++i) accm[i] = std::fma(static_cast<float>(mm[i]), dmin, accm[i]);
  }
  return hsum8(acc) + ((accm[0] + accm[2]) + (accm[1] + accm[3]));
}

// The documented Q5_K output (q5_k_gemm.hpp).
inline float q5_k_dot(const std::uint8_t* w, const Q8KRow& x, std::int64_t k) {
  float acc[8] = {}, summs = 0;
  for (std::int64_t b = 0; b < k / 256; ++b) {
    const Q4KBlock wb = q5_k_block(w + b * 176);
    const int* xq = x.q.data() + b * 256;
    const int* bs = x.bsums.data() + b * 16;
    long s[8] = {}, mm = 0;
    for (int e = 0; e < 256; ++e) s[(e % 32) / 4] += static_cast<long>(wb.sc[e / 32]) * wb.q[e] * xq[e];
    for (int j = 0; j < 8; ++j) mm += static_cast<long>(wb.m[j]) * (bs[2 * j] + bs[2 * j + 1]);
    const float dx = x.d[static_cast<std::size_t>(b)];
    const float d = dx * wb.d, dmin = -(dx * wb.dmin);
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(s[l]), d, acc[l]);
    summs = std::fma(static_cast<float>(mm), dmin, summs);
  }
  return hsum8(acc) + summs;
}

// The documented Q6_K output (q6_k_gemm.hpp).
inline float q6_k_dot(const std::uint8_t* w, const Q8KRow& x, std::int64_t k) {
  float acc[8] = {};
  for (std::int64_t b = 0; b < k / 256; ++b) {
    const Q6KBlock wb = q6_k_block(w + b * 210);
    const int* xq = x.q.data() + b * 256;
    const int* bs = x.bsums.data() + b * 16;
    long s[8] = {};
    for (int e = 0; e < 256; ++e) s[(e % 32) / 4] += static_cast<long>(wb.sc[e / 16]) * (wb.q[e] + 32) * xq[e];
    for (int l = 0; l < 8; ++l) s[l] -= 32L * (static_cast<long>(wb.sc[2 * l]) * bs[2 * l] + static_cast<long>(wb.sc[2 * l + 1]) * bs[2 * l + 1]);
    const float d = x.d[static_cast<std::size_t>(b)] * wb.d;
    for (int l = 0; l < 8; ++l) acc[l] = std::fma(static_cast<float>(s[l]), d, acc[l]);
  }
  return hsum8(acc);
}

// ---- The simple per-block optima the quantizers are measured against ----

inline int nearest(float v) { return static_cast<int>(std::nearbyint(v)); }

// Q4_K / Q5_K: for one super-block, given d and dmin, every sub-block takes the best of all 64 x 64
// (6-bit scale, 6-bit min) pairs with nearest codes; d is tried at 0.80, 0.85, .. 1.05 x (largest
// sub-block range / nmax / 63) and dmin at 0.9, 1, 1.1 x (largest -min / 63), rounded to fp16.
// Returns the least total squared error of the dequantized values.
inline double k4_optimum_sq_error(const float* x, int nmax) {
  float max_s = 0, max_m = 0;
  for (int j = 0; j < 8; ++j) {
    const float* v = x + 32 * j;
    float lo = 0, hi = v[0];
    for (int i = 0; i < 32; ++i) {
      lo = std::min(lo, v[i]);
      hi = std::max(hi, v[i]);
    }
    if (hi == lo) {
      max_m = std::max(max_m, -lo);
      continue;
    }
    max_s = std::max(max_s, (hi - lo) / nmax);
    max_m = std::max(max_m, -lo);
  }
  double best_total = INFINITY;
  for (double fs : {0.80, 0.85, 0.90, 0.95, 1.0, 1.05})
    for (double fm : {0.9, 1.0, 1.1}) {
      const float d = fp16_to_fp32(fp32_to_fp16(static_cast<float>(max_s / 63 * fs)));
      const float dmin = fp16_to_fp32(fp32_to_fp16(static_cast<float>(max_m / 63 * fm)));
      double total = 0;
      for (int j = 0; j < 8; ++j) {
        const float* v = x + 32 * j;
        double best = INFINITY;
        for (int ls = 0; ls < 64; ++ls) {
          const float d1 = d * static_cast<float>(ls);
          for (int lm = 0; lm < 64; ++lm) {
            const float m1 = dmin * static_cast<float>(lm);
            double e = 0;
            for (int i = 0; i < 32 && e < best; ++i) {
              const int q = d1 != 0.0f ? std::clamp(nearest((v[i] + m1) / d1), 0, nmax) : 0;
              const double diff = static_cast<double>(d1 * static_cast<float>(q) - m1) - v[i];
              e += diff * diff;
            }
            best = std::min(best, e);
          }
        }
        total += best;
      }
      best_total = std::min(best_total, total);
    }
  return best_total;
}

// Q6_K: for one super-block, d over 0.80 .. 1.20 x (largest |x| / 32 / 127) in steps of 0.01
// (fp16), and for each sub-block of 16 the best of all 256 int8 scales with nearest codes in
// -32..31. Returns the least total squared error.
inline double q6_k_optimum_sq_error(const float* x) {
  float amax = 0;
  for (int i = 0; i < 256; ++i) amax = std::max(amax, std::fabs(x[i]));
  if (amax == 0) return 0;
  double best_total = INFINITY;
  for (int t = 80; t <= 120; ++t) {
    const float d = fp16_to_fp32(fp32_to_fp16(static_cast<float>(amax / 32 / 127 * t / 100.0)));
    double total = 0;
    for (int j = 0; j < 16; ++j) {
      const float* v = x + 16 * j;
      double best = INFINITY;
      for (int s = -128; s < 128; ++s) {
        const float ds = d * static_cast<float>(s);
        double e = 0;
        for (int i = 0; i < 16 && e < best; ++i) {
          const int q = ds != 0.0f ? std::clamp(nearest(v[i] / ds), -32, 31) : 0;
          const double diff = static_cast<double>(ds * static_cast<float>(q)) - v[i];
          e += diff * diff;
        }
        best = std::min(best, e);
      }
      total += best;
    }
    best_total = std::min(best_total, total);
  }
  return best_total;
}

}  // namespace kquant_ref
