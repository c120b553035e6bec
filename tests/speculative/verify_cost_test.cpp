// The verify-cost model: the line it fits, the per-size correction for a staircase of costs, and
// the budget it picks from acceptance chances.
#include <gtest/gtest.h>

#include <vector>

#include "speculative/verify_cost.hpp"

namespace graft {
namespace {

constexpr double kTolerance = 0.01;  // relative: the decayed fits forget their start slowly

TEST(VerifyCost, NothingMeasuredMeansTryEverything) {
  VerifyCost c;
  EXPECT_EQ(c.estimate(3), 0.0);
  const std::vector<float> chances = {0.9f, 0.1f, 0.01f};
  EXPECT_EQ(c.best_count(chances), 3u);
}

TEST(VerifyCost, FitsALineThroughTwoSizes) {
  VerifyCost c;
  // t(n) = 1 + 0.5 (n - 1): sizes 1 and 5, alternating.
  for (int i = 0; i < 40; ++i) {
    c.record(1, 1.0);
    c.record(5, 3.0);
  }
  EXPECT_NEAR(c.estimate(1), 1.0, kTolerance * 1.0);
  EXPECT_NEAR(c.estimate(5), 3.0, kTolerance * 3.0);
  EXPECT_NEAR(c.estimate(3), 2.0, kTolerance * 2.0);  // never measured: the line
}

TEST(VerifyCost, EachMeasuredSizeKeepsItsOwnStep) {
  VerifyCost c;
  // A staircase: 1 row costs 1, 2..4 rows cost 1.5, 5..8 rows cost 2.5.
  auto cost = [](std::uint32_t n) { return n == 1 ? 1.0 : n <= 4 ? 1.5 : 2.5; };
  for (int i = 0; i < 60; ++i)
    for (std::uint32_t n : {1u, 3u, 4u, 5u}) c.record(n, cost(n));
  for (std::uint32_t n : {1u, 3u, 4u, 5u}) EXPECT_NEAR(c.estimate(n), cost(n), kTolerance * cost(n)) << n;
  // 3 and 4 rows now cost the same, so with chances 0.5 and 0.3 for the 2nd and 3rd node the
  // budget takes 3 nodes (4 rows); the line alone would price the 4th row and stop at 2.
  const std::vector<float> chances = {0.9f, 0.5f, 0.3f, 0.05f};
  EXPECT_EQ(c.best_count(chances), 3u);
}

TEST(VerifyCost, OneOutlierDoesNotPriceASizeOut) {
  VerifyCost c;
  for (int i = 0; i < 40; ++i) {
    c.record(1, 1.0);
    c.record(3, 1.5);
  }
  c.record(3, 100.0);  // a pass hit by a preemption
  EXPECT_LT(c.estimate(3), 1.5 * 1.4);
}

}  // namespace
}  // namespace graft
