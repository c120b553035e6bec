// Q3_K quantizer: reconstruction error on Gaussian and zoo weights against a per-block optimum
// (docs/formats.md, "Q3_K"), plus edge blocks.
#include <algorithm>
#include <cmath>

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
