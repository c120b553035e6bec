// Q2_K quantizer: reconstruction error on Gaussian and zoo weights against a per-block optimum
// (docs/formats_kquants.md, "Q2_K"), plus edge blocks.
#include <algorithm>
#include <cmath>

#include "kquant_error.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

float fp16_round(float v) { return quant_ref::fp16_to_fp32(quant_ref::fp32_to_fp16(v)); }

// The per-block optimum: super-scales d and dmin on a grid (0.50, 0.55, ..., 1.20 times the values
// that let the widest sub-block's range (max - min(0, min)) / 3 and deepest min reach code 15),
// both rounded to fp16; for each pair, every sub-block takes the best of all 16 x 16 (scale, min)
// codes with each element at its nearest level, which is exact for that pair.
double q2_k_optimum_sse(const float* x) {
  double max_range = 0, max_min = 0;
  for (int j = 0; j < 16; ++j) {
    const float* v = x + 16 * j;
    const float lo = std::min(0.0f, *std::min_element(v, v + 16)), hi = *std::max_element(v, v + 16);
    max_range = std::max(max_range, (static_cast<double>(hi) - lo) / 3);
    max_min = std::max(max_min, -static_cast<double>(lo));
  }
  double best = INFINITY;
  for (int gd = 0; gd <= 14; ++gd)
    for (int gm = 0; gm <= 14; ++gm) {
      const float d = fp16_round(static_cast<float>(max_range / 15 * (0.5 + 0.05 * gd)));
      const float dmin = fp16_round(static_cast<float>(max_min / 15 * (0.5 + 0.05 * gm)));
      double total = 0;
      for (int j = 0; j < 16 && total < best; ++j) {
        double sub_best = INFINITY;
        for (int sc = 0; sc < 16; ++sc)
          for (int m = 0; m < 16; ++m) {
            const float dl = d * static_cast<float>(sc), ml = dmin * static_cast<float>(m);
            double e2 = 0;
            for (int i = 0; i < 16; ++i) {
              const float v = x[16 * j + i];
              const int q = dl > 0 ? static_cast<int>(std::clamp(std::nearbyint((v + ml) / dl), 0.0f, 3.0f)) : 0;
              const double e = static_cast<double>(dl * static_cast<float>(q) - ml) - v;
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

TEST(Q2K, GaussianErrorWithinTenPercentOfTheOptimum) {
  auto f = format("q2_k");
  const auto x = gaussian(256 * 32, 1.0f, 81);
  const auto r = kquant_error::measure("q2_k gaussian", *f, x, q2_k_optimum_sse);
  EXPECT_LE(r.ours, 1.10 * r.optimum);
}

TEST(Q2K, ZooWeightErrorWithinTenPercentOfTheOptimum) {
  auto f = format("q2_k");
  const auto x = kquant_error::zoo_weights(kquant_error::kZooTensors, 12);
  ASSERT_EQ(x.size(), 4u * 12 * 256);
  const auto r = kquant_error::measure("q2_k zoo", *f, x, q2_k_optimum_sse);
  EXPECT_LE(r.ours, 1.10 * r.optimum);
}

TEST(Q2K, EdgeBlocks) {
  auto f = format("q2_k");
  std::vector<float> x(256 * 4, 0.0f);                                                   // block 0: zeros
  for (int i = 0; i < 256; ++i) x[256 + static_cast<std::size_t>(i)] = 0.75f;           // block 1: one positive constant
  for (int i = 0; i < 256; ++i) x[512 + static_cast<std::size_t>(i)] = -2.0f;            // block 2: one negative constant
  for (int i = 0; i < 256; ++i) x[768 + static_cast<std::size_t>(i)] = static_cast<float>(i % 4) - 1.0f;  // exact 4 levels
  const auto y = dequantize(*f, quantize(*f, x, 256, 4), 1024);
  for (int i = 0; i < 256; ++i) EXPECT_EQ(y[static_cast<std::size_t>(i)], 0.0f) << i;
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(y[256 + static_cast<std::size_t>(i)], 0.75f, 0.75f * 0x1p-10) << i;
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(y[512 + static_cast<std::size_t>(i)], -2.0f, 2.0f * 0x1p-10) << i;
  for (int i = 0; i < 256; ++i) EXPECT_NEAR(y[768 + static_cast<std::size_t>(i)], x[768 + static_cast<std::size_t>(i)], 2e-3) << i;
}
