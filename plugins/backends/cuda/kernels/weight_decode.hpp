// How the CUDA kernels decode the file's blocks, 32 elements at a time (weight_kernels.cu). Plain
// C++ as well as CUDA, so tests/backends/test_cuda_decode.cpp checks every decoder against the
// format plugin's dequantize on the host, where no GPU is needed.
#pragma once

#include <cstdint>
#include <cstring>

#ifdef __CUDACC__
#include <cuda_fp16.h>
#define GRAFT_HD __host__ __device__
#else
#include "half.hpp"  // plugins/common: the host's f16 conversion, for the tests
#define GRAFT_HD
#endif

namespace graft::cuda::decode {

// ggml type ids (graft/tensor.hpp type_id; the .cu files include no SDK header).
constexpr std::uint32_t kF32 = 0, kF16 = 1, kQ8_0 = 8, kQ4_K = 12, kBF16 = 30, kQ1_0 = 41;

GRAFT_HD inline float f16_at(const std::uint8_t* p) {
  std::uint16_t h;
  memcpy(&h, p, 2);
#ifdef __CUDACC__
  __half_raw raw;
  raw.x = h;
  return __half2float(__half(raw));
#else
  return f16_to_f32(h);
#endif
}

GRAFT_HD inline float bits_to_f32(std::uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

// Each decode writes the 32 elements [32 c, 32 c + 32) of a row into v.
struct F32 {
  GRAFT_HD static void decode(const std::uint8_t* row, int c, float* v) { memcpy(v, row + 128 * c, 128); }
};
struct F16 {
  GRAFT_HD static void decode(const std::uint8_t* row, int c, float* v) {
    for (int e = 0; e < 32; ++e) v[e] = f16_at(row + 64 * c + 2 * e);
  }
};
struct BF16 {
  GRAFT_HD static void decode(const std::uint8_t* row, int c, float* v) {
    for (int e = 0; e < 32; ++e) {
      std::uint16_t b;
      memcpy(&b, row + 64 * c + 2 * e, 2);
      v[e] = bits_to_f32(static_cast<std::uint32_t>(b) << 16);
    }
  }
};
// block_q8_0: fp16 d, int8 qs[32]; x = d * q.
struct Q8_0 {
  GRAFT_HD static void decode(const std::uint8_t* row, int c, float* v) {
    const std::uint8_t* b = row + 34 * c;
    const float d = f16_at(b);
    for (int e = 0; e < 32; ++e) v[e] = d * static_cast<float>(static_cast<std::int8_t>(b[2 + e]));
  }
};
// block_q4_K (256 elements): fp16 d, fp16 dmin, 12 bytes of 6-bit scales and mins for 8 sub-blocks
// of 32, qs[128] (sub-blocks 2p and 2p+1 are the low and high nibbles of qs[32p..32p+32)):
// x = d * scale * q - dmin * min (ggml's dequantize_row_q4_K and get_scale_min_k4).
struct Q4_K {
  GRAFT_HD static void decode(const std::uint8_t* row, int c, float* v) {
    const std::uint8_t* b = row + 144 * (c / 8);
    const int j = c % 8;
    const float d = f16_at(b), dmin = f16_at(b + 2);
    const std::uint8_t* s = b + 4;
    int sc, mn;
    if (j < 4) {
      sc = s[j] & 63;
      mn = s[j + 4] & 63;
    } else {
      sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
      mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
    const float d1 = d * static_cast<float>(sc), m1 = dmin * static_cast<float>(mn);
    const std::uint8_t* q = b + 16 + 32 * (j / 2);
    const int shift = (j % 2) * 4;
    for (int e = 0; e < 32; ++e) v[e] = d1 * static_cast<float>((q[e] >> shift) & 0xF) - m1;
  }
};
// block_q1_0 (128 elements): fp16 d, qs[16]; element e is bit e % 8 of qs[e / 8]: 1 -> +d, 0 -> -d.
struct Q1_0 {
  GRAFT_HD static void decode(const std::uint8_t* row, int c, float* v) {
    const std::uint8_t* b = row + 18 * (c / 4);
    const float d = f16_at(b);
    const std::uint8_t* q = b + 2 + 4 * (c % 4);
    for (int e = 0; e < 32; ++e) v[e] = ((q[e / 8] >> (e % 8)) & 1) ? d : -d;
  }
};

}  // namespace graft::cuda::decode
