// tq3's two parts on their own: the rotation (orthonormal: it keeps lengths and dot products, and
// its inverse undoes it) and the 3-bit block codec (its error on Gaussian rows, its least-squares
// scale, and every SIMD level decoding a block to the same bits as the plain code).
#include <bit>
#include <cstring>

#include "kv_test_util.hpp"
#include "rotation.hpp"
#include "tq3_rows.hpp"

using namespace kvtest;

namespace {

std::vector<float> gaussian(std::mt19937& rng, std::size_t n) {
  std::normal_distribution<float> d;
  std::vector<float> x(n);
  for (auto& v : x) v = d(rng);
  return x;
}

double dot(const float* a, const float* b, std::uint32_t n) {
  double s = 0;
  for (std::uint32_t i = 0; i < n; ++i) s += static_cast<double>(a[i]) * b[i];
  return s;
}

TEST(kvTq3, RotationKeepsLengthsAndDotProductsAndUndoesItself) {
  std::mt19937 rng(1);
  for (std::uint32_t d : {2u, 32u, 64u, 128u, 256u, 1024u}) {
    SCOPED_TRACE(d);
    const auto x = gaussian(rng, d), y = gaussian(rng, d);
    auto rx = x, ry = y;
    kv::rotate_row(rx.data(), d);
    kv::rotate_row(ry.data(), d);
    const double norm = std::sqrt(dot(x.data(), x.data(), d));
    EXPECT_NEAR(std::sqrt(dot(rx.data(), rx.data(), d)), norm, 1e-5 * norm);
    EXPECT_NEAR(dot(rx.data(), ry.data(), d), dot(x.data(), y.data(), d), 1e-5 * norm * norm);
    EXPECT_GT(max_abs_diff(rx, std::vector<double>(x.begin(), x.end())), 0.1) << "the rotation must move the row";
    kv::unrotate_row(rx.data(), d);
    for (std::uint32_t i = 0; i < d; ++i) EXPECT_NEAR(rx[i], x[i], 1e-5f * static_cast<float>(norm)) << i;
  }
}

// A row with all its energy in one element comes out spread evenly: every element +-1/sqrt(d)
// (what lets one codebook fit rows with outlier channels).
TEST(kvTq3, RotationSpreadsASpikeOverTheWholeRow) {
  constexpr std::uint32_t d = 128;
  for (std::uint32_t spike : {0u, 5u, 127u}) {
    std::vector<float> x(d, 0.0f);
    x[spike] = 1.0f;
    kv::rotate_row(x.data(), d);
    for (float v : x) EXPECT_NEAR(std::fabs(v), 1.0f / std::sqrt(128.0f), 1e-7f);
  }
}

TEST(kvTq3, RotatableHeadSizesArePowersOfTwoUpToTheLimit) {
  for (std::uint32_t d : {2u, 64u, 128u, 256u, 1024u}) EXPECT_TRUE(kv::rotatable(d)) << d;
  for (std::uint32_t d : {0u, 1u, 96u, 192u, 2048u}) EXPECT_FALSE(kv::rotatable(d)) << d;
}

// Measured 0.0283 of the energy on Gaussian rows (the fixed-scale Lloyd-Max quantizer's distortion is
// 0.0345); the bound leaves room for the fp16 scale only.
TEST(kvTq3, QuantizedGaussianRowsKeepAllButThreePercentOfTheirEnergy) {
  std::mt19937 rng(2);
  constexpr std::uint32_t n = 32 * 4096;
  const auto x = gaussian(rng, n);
  std::vector<kv::block_tq3> b(n / 32);
  std::vector<float> y(n);
  kv::quantize_row_tq3(x.data(), b.data(), n);
  kv::dequantize_row_tq3(b.data(), y.data(), n);
  double err = 0, energy = 0;
  for (std::uint32_t i = 0; i < n; ++i) {
    err += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    energy += static_cast<double>(x[i]) * x[i];
  }
  EXPECT_LT(err / energy, 0.029);
  EXPECT_GT(err / energy, 0.02) << "three bits cannot do better than the Lloyd-Max bound by this much";
}

// The stored scale is the least-squares one for the stored codes (up to its fp16 rounding): a
// slightly different scale gives a larger error; signs are kept; a zero block decodes to +0.
TEST(kvTq3, TheScaleIsTheBestForTheCodesAndZeroStaysZero) {
  std::mt19937 rng(3);
  const auto x = gaussian(rng, 32);
  kv::block_tq3 b;
  kv::quantize_row_tq3(x.data(), &b, 32);
  const float d = f16_to_f32(b.d);
  auto error = [&](float scale) {
    double e = 0;
    for (int j = 0; j < 32; ++j) {
      const double r = static_cast<double>(kv::kTq3Levels[kv::tq3_index(b, j)]) * scale - x[j];
      e += r * r;
    }
    return e;
  };
  EXPECT_LT(error(d), error(d * 1.01f));
  EXPECT_LT(error(d), error(d * 0.99f));
  for (int j = 0; j < 32; ++j) EXPECT_EQ(kv::tq3_index(b, j) >= 4, x[j] < 0.0f) << j;
  const std::vector<float> zero(64, 0.0f);
  kv::block_tq3 z[2];
  kv::quantize_row_tq3(zero.data(), z, 64);
  std::vector<float> back(64, 1.0f);
  kv::dequantize_row_tq3(z, back.data(), 64);
  for (float v : back) EXPECT_EQ(std::bit_cast<std::uint32_t>(v), 0u);
}

// The vector levels decode tq3 with a permute of the level table; the bits must be the plain code's.
TEST(kvTq3, EveryLevelDecodesBlocksToThePlainBits) {
  std::mt19937 rng(4);
  constexpr std::uint32_t n = 256;
  for (int round = 0; round < 20; ++round) {
    auto x = gaussian(rng, n);
    x[round] *= 50.0f;  // an outlier somewhere
    std::vector<kv::block_tq3> b(n / 32);
    kv::quantize_row_tq3(x.data(), b.data(), n);
    std::vector<float> want(n), got(n);
    kv::dequantize_row_tq3(b.data(), want.data(), n);
    for (const kv::AttnKernels* k : {kv::attn_kernels_avx2(), kv::attn_kernels_avx512()}) {
      if (!k || !kv::cpu_supports(k == kv::attn_kernels_avx2() ? kv::AttnSimd::avx2 : kv::AttnSimd::avx512)) continue;
      std::fill(got.begin(), got.end(), NAN);
      k->decode_tq3(b.data(), got.data(), n);
      EXPECT_EQ(std::memcmp(got.data(), want.data(), n * sizeof(float)), 0);
    }
  }
}

}  // namespace
