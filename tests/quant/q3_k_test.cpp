// Q3_K quantizer: reconstruction error on Gaussian and zoo weights against a per-block optimum
// (docs/formats_kquants.md, "Q3_K"), plus edge blocks.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "activations/q8k_activations.hpp"
#include "kquant_error.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

float fp16_round(float v) { return quant_ref::fp16_to_fp32(quant_ref::fp32_to_fp16(v)); }

// The per-block optimum: the super-scale d on a grid of 81 values 0.40 .. 1.20 times +-A / 32 and
// 81 more times A / 31 (A: the signed value of largest magnitude over the block, divided by -4, so
// it is a sub-block scale sending that value to code -4), rounded to fp16; for each d, every
// sub-block takes the best of all 64 scales with each element at its nearest level (exact for d).
double q3_k_optimum_sse(const float* x) {
  float amax = 0, max = 0;
  for (int i = 0; i < 256; ++i)
    if (std::fabs(x[i]) > amax) {
      amax = std::fabs(x[i]);
      max = x[i];
    }
  const double a = max / -4.0;
  double best = INFINITY;
  for (double target : {-32.0, 31.0})
    for (int g = 0; g <= 80; ++g) {
      const float d = fp16_round(static_cast<float>(a / target * (0.4 + 0.01 * g)));
      double total = 0;
      for (int j = 0; j < 16 && total < best; ++j) {
        double sub_best = INFINITY;
        for (int sc = -32; sc < 32; ++sc) {
          const float dl = d * static_cast<float>(sc);
          double e2 = 0;
          for (int i = 0; i < 16; ++i) {
            const float v = x[16 * j + i];
            const int q = dl != 0 ? static_cast<int>(std::clamp(std::nearbyint(v / dl), -4.0f, 3.0f)) : 0;
            const double e = static_cast<double>(dl * static_cast<float>(q)) - v;
            e2 += e * e;
          }
          sub_best = std::min(sub_best, e2);
        }
        total += sub_best;
      }
      best = std::min(best, total);
    }
  return best;
}

}  // namespace

TEST(Q3K, GaussianErrorWithinTenPercentOfTheOptimum) {
  auto f = format("q3_k");
  const auto x = gaussian(256 * 32, 1.0f, 91);
  const auto r = kquant_error::measure("q3_k gaussian", *f, x, q3_k_optimum_sse);
  EXPECT_LE(r.ours, 1.10 * r.optimum);
}

TEST(Q3K, ZooWeightErrorWithinTenPercentOfTheOptimum) {
  auto f = format("q3_k");
  const auto x = kquant_error::zoo_weights(kquant_error::kZooTensors, 12);
  ASSERT_EQ(x.size(), 4u * 12 * 256);
  const auto r = kquant_error::measure("q3_k zoo", *f, x, q3_k_optimum_sse);
  EXPECT_LE(r.ours, 1.10 * r.optimum);
}

TEST(Q3K, EdgeBlocks) {
  auto f = format("q3_k");
  std::vector<float> x(256 * 3, 0.0f);                                                            // block 0: zeros
  for (int i = 0; i < 256; ++i) x[256 + static_cast<std::size_t>(i)] = -1.5f;                    // block 1: a constant
  for (int i = 0; i < 256; ++i) x[512 + static_cast<std::size_t>(i)] = static_cast<float>(i % 8) - 4.0f;  // exact levels
  const auto y = dequantize(*f, quantize(*f, x, 256, 3), 768);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[static_cast<std::size_t>(i)], 0.0f) << i;
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(y[256 + static_cast<std::size_t>(i)], -1.5f, 1.5f * 0x1p-10) << i;
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(y[512 + static_cast<std::size_t>(i)], x[512 + static_cast<std::size_t>(i)], 4e-3) << i;
}

// The AVX-512 batch kernel stores code * (scale - 32) + 124 in a byte: the products' extremes
// (-4 * -32 = 128, -4 * 31 = -124, 3 * -32 = -96) against +-127 quants must give every level's
// and every batch position's bits. Rows: all scales 0 / 63 with codes all -4 / all 3, then mixed.
TEST(Q3K, BatchKernelsAtExtremeProducts) {
  constexpr std::int64_t k = 512, m = 7, n = 64;
  std::vector<std::uint8_t> q(static_cast<std::size_t>(m * (k / 256) * 110), 0);
  for (std::int64_t r = 0; r < m; ++r)
    for (std::int64_t b = 0; b < k / 256; ++b) {
      std::uint8_t* blk = q.data() + (r * (k / 256) + b) * 110;
      const bool code3 = r & 1, scale63 = r & 2;
      std::fill(blk, blk + 96, code3 ? 0xFF : 0x00);         // hmask, qs: codes 3 or -4
      std::fill(blk + 96, blk + 108, scale63 ? 0xFF : 0x00);  // six-bit scales 63 or 0
      if (r >= 4)
        for (int j = 0; j < 108; ++j) blk[j] = static_cast<std::uint8_t>(j * 37 + r * 11 + b);
      blk[108] = 0x00;
      blk[109] = 0x3C;  // d = 1
    }
  std::vector<float> x = gaussian(static_cast<std::size_t>(k * n), 1.0f, 91);
  for (std::size_t i = 0; i < x.size(); i += 3) x[i] = i % 2 ? 100.0f : -100.0f;  // quants at +-127
  const auto want = matmul(*format("q3_k", "scalar"), *cpu(1), q, k, m, x.data(), n);
  for (const auto& level : available_levels()) {
    auto fmt = format("q3_k", level);
    const auto y = matmul(*fmt, *cpu(2), q, k, m, x.data(), n);
    EXPECT_EQ(std::memcmp(y.data(), want.data(), want.size() * 4), 0) << level;
    for (std::int64_t c : {0, 1, 62, 63})
      EXPECT_EQ(std::memcmp(matmul(*fmt, *cpu(1), q, k, m, x.data() + c * k, 1).data(), want.data() + c * m, m * 4), 0)
          << level << " column " << c;
  }
  // Row 0 is every weight 128 (code -4, scale 0 - 32, d = 1): y = sum over blocks of
  // d_x * 128 * (sum of quants), up to f32 rounding.
  constexpr double kRelTol = 1e-6;
  std::vector<std::int8_t> xq(k);
  std::vector<float> dx(k / 256);
  std::vector<std::int16_t> bs(k / 16);
  graft::quant::quantize_q8k_row(x.data(), k, xq.data(), dx.data(), bs.data());
  double ref = 0, mag = 0;
  for (std::int64_t b = 0; b < k / 256; ++b) {
    std::int64_t s = 0;
    for (int e = 0; e < 256; ++e) s += xq[static_cast<std::size_t>(b * 256 + e)];
    ref += static_cast<double>(dx[b]) * 128.0 * static_cast<double>(s);
    mag += std::fabs(static_cast<double>(dx[b])) * 128.0 * 256 * 127;
  }
  EXPECT_NEAR(want[0], ref, kRelTol * mag);
}
