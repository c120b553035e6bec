// Q8_0 activation quantization (ggml's x86 quantize_row_q8_0): the AVX2 and AVX-512 rows equal the
// scalar row bit for bit on blocks meant to catch a vector max, division, fp16 round trip, rounding
// or narrowing that drifts, in runs of 16 blocks (the AVX-512 form's unit) and shorter tails.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "activations/q8_activations.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {
namespace {

struct Row {
  std::vector<std::int8_t> qs;
  std::vector<std::uint32_t> d;  // scale bits
  std::vector<std::int32_t> offsets;
};

using RowFn = void (*)(const float*, std::int64_t, std::int32_t, std::int8_t*, float*, std::int32_t*) noexcept;

Row quantize_with(RowFn fn, const std::vector<float>& x, std::int32_t offset) {
  const auto k = static_cast<std::int64_t>(x.size());
  std::vector<float> d(x.size() / 32, 99.0f);
  Row r{std::vector<std::int8_t>(x.size(), 99), {}, std::vector<std::int32_t>(x.size() / 4, 99)};
  fn(x.data(), k, offset, r.qs.data(), d.data(), r.offsets.data());
  for (float v : d) r.d.push_back(std::bit_cast<std::uint32_t>(v));
  return r;
}

// Gaussian blocks at scales from 2^-40 to 2^30, all +0 and all -0, a block whose largest magnitude
// appears with both signs, half-integer products (ties to even), values near FLT_MAX (the fp16
// scale overflows to infinity), denormals and tiny values (fp16 subnormal scales, 127 / amax
// overflowing), and a block of exact multiples of its scale.
std::vector<float> hard_blocks(int count) {
  std::mt19937 rng(23);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x;
  for (int b = 0; b < count; ++b) {
    std::vector<float> v(32);
    switch (b % 8) {
      case 0:
      case 1:
        for (auto& e : v) e = g(rng) * std::ldexp(1.0f, (b * 7) % 70 - 40);
        break;
      case 2:
        for (auto& e : v) e = (b % 16 == 2) ? 0.0f : -0.0f;
        break;
      case 3:
        for (auto& e : v) e = g(rng);
        v[b % 32] = 4.0f, v[(b + 9) % 32] = -4.0f;
        break;
      case 4:
        for (int j = 0; j < 32; ++j) v[j] = static_cast<float>(j - 16) + 0.5f;
        v[5] = 127.0f;  // scale 1: every other value is a tie
        break;
      case 5:
        for (auto& e : v) e = g(rng) * 1.0e37f;
        v[3] = std::numeric_limits<float>::max();
        break;
      case 6:
        for (auto& e : v) e = g(rng) * ((b / 8) % 2 ? 1.0e-40f : 1.0e-6f);
        v[0] = (b / 8) % 2 ? std::numeric_limits<float>::denorm_min() * 3 : 6.0e-5f;
        break;
      default:
        for (int j = 0; j < 32; ++j) v[j] = static_cast<float>((j * 37) % 255 - 127) * 0.125f;
        break;
    }
    x.insert(x.end(), v.begin(), v.end());
  }
  return x;
}

// The first block where two rows differ, or -1.
long first_difference(const Row& a, const Row& b) {
  for (std::size_t blk = 0; blk < a.d.size(); ++blk)
    if (a.d[blk] != b.d[blk] || std::memcmp(a.qs.data() + 32 * blk, b.qs.data() + 32 * blk, 32) != 0 ||
        std::memcmp(a.offsets.data() + 8 * blk, b.offsets.data() + 8 * blk, 32) != 0)
      return static_cast<long>(blk);
  return -1;
}

void expect_same(const Row& got, const Row& want, const char* what) {
  EXPECT_EQ(first_difference(got, want), -1) << what;
}

// The scalar form converts x * (127 / amax) to int with a cast, undefined once 127 / amax
// overflows (amax below ~3.7e-37: the denormal blocks); the vector forms give -128 or 0 there.
// So the scalar row is the reference without those blocks, and the AVX2 row with them.
TEST(Q8Activations, SimdRowsMatchScalarBitForBit) {
  if (!cpu_supports(SimdLevel::avx2)) GTEST_SKIP() << "no AVX2";
  for (int blocks : {1, 15, 16, 17, 40, 88}) {
    std::vector<float> x = hard_blocks(blocks), defined;
    for (int b = 0; b < blocks; ++b)
      if (!(b % 8 == 6 && (b / 8) % 2 == 1)) defined.insert(defined.end(), x.begin() + 32 * b, x.begin() + 32 * b + 32);
    for (std::int32_t offset : {0, 8, 128}) {
      const Row want = quantize_with(&quantize_activation_row, defined, offset);
      expect_same(quantize_with(&quantize_activation_row_avx2, defined, offset), want, "avx2");
      if (!cpu_supports(SimdLevel::avx512)) continue;
      expect_same(quantize_with(&quantize_activation_row_avx512, defined, offset), want, "avx512");
      expect_same(quantize_with(&quantize_activation_row_avx512, x, offset),
                  quantize_with(&quantize_activation_row_avx2, x, offset), "avx512 against avx2, denormal blocks too");
    }
  }
  // The hard blocks do reach the cases they are meant for.
  const Row r = quantize_with(&quantize_activation_row, hard_blocks(16), 0);
  EXPECT_EQ(r.d[2], 0u);                                                          // all +0
  EXPECT_EQ(r.d[4], std::bit_cast<std::uint32_t>(1.0f));                          // ties at scale 1
  EXPECT_EQ(r.qs[4 * 32], -16);                                                   // -15.5 -> -16
  EXPECT_EQ(r.qs[4 * 32 + 1], -14);                                               // -14.5 -> -14
  EXPECT_TRUE(std::isinf(std::bit_cast<float>(r.d[5])));                          // near FLT_MAX
  EXPECT_GT(std::bit_cast<float>(r.d[6]), 0.0f);
  EXPECT_LT(std::bit_cast<float>(r.d[6]), std::ldexp(1.0f, -14));                 // fp16 subnormal
}

}  // namespace
}  // namespace graft::quant
