// The attention's exponential (softmax_exp.hpp): close to expf, exact where the softmax needs it
// (e^0 = 1), its edges as documented, and each SIMD table's exp_shifted equal to the scalar form
// bit for bit over a sweep of the range and the edge values.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "kv_test_util.hpp"
#include "softmax_exp.hpp"

using namespace graft;

namespace {

constexpr double kMaxUlp = 1.5;  // measured worst over the sweep: 0.93 ulp (Cephes documents ~2)

double ulp_error(float got, double want) {
  const double ulp = std::ldexp(1.0, std::ilogb(static_cast<float>(want)) - 23);
  return std::abs(got - want) / ulp;
}

// Every 1009th float bit pattern between the documented edges, and the edges' neighbours.
std::vector<float> sweep() {
  std::vector<float> x;
  for (float v = kv::kSoftmaxExpMin; v <= kv::kSoftmaxExpMax;) {
    x.push_back(v);
    const auto b = std::bit_cast<std::uint32_t>(v);
    v = v < 0 ? std::bit_cast<float>(b - std::min<std::uint32_t>(1009, b - 0x80000000u)) : std::bit_cast<float>(b + 1009);
    if (v == 0.0f) v = std::bit_cast<float>(std::uint32_t{1});
  }
  const float inf = std::numeric_limits<float>::infinity();
  for (float e : {kv::kSoftmaxExpMin, kv::kSoftmaxExpMax})
    x.insert(x.end(), {std::nextafter(e, -inf), e, std::nextafter(e, inf)});
  x.insert(x.end(), {0.0f, -0.0f, -inf, inf, std::numeric_limits<float>::quiet_NaN(), -1e-30f, 1e-30f, -0.5f,
                     0.34657359f, -0.34657359f, -1000.0f, 1000.0f});
  return x;
}

TEST(SoftmaxExp, WithinOneAndAHalfUlpOfExpAndExactAtZero) {
  EXPECT_EQ(std::bit_cast<std::uint32_t>(kv::softmax_exp(0.0f)), std::bit_cast<std::uint32_t>(1.0f));
  EXPECT_EQ(kv::softmax_exp(-0.0f), 1.0f);
  double worst = 0;
  for (float x : sweep()) {
    if (!(x >= kv::kSoftmaxExpMin && x <= kv::kSoftmaxExpMax)) continue;
    const double e = ulp_error(kv::softmax_exp(x), std::exp(static_cast<double>(x)));
    worst = std::max(worst, e);
    ASSERT_LE(e, kMaxUlp) << "x = " << x;
  }
  RecordProperty("worst_ulp", std::to_string(worst));
}

TEST(SoftmaxExp, EdgesAreZeroInfinityAndNaN) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(kv::softmax_exp(-inf), 0.0f);
  EXPECT_EQ(kv::softmax_exp(std::nextafter(kv::kSoftmaxExpMin, -inf)), 0.0f);
  EXPECT_GT(kv::softmax_exp(kv::kSoftmaxExpMin), 0.0f);
  EXPECT_TRUE(std::isnormal(kv::softmax_exp(kv::kSoftmaxExpMin)));
  EXPECT_EQ(kv::softmax_exp(std::nextafter(kv::kSoftmaxExpMax, inf)), inf);
  EXPECT_TRUE(std::isfinite(kv::softmax_exp(kv::kSoftmaxExpMax)));
  EXPECT_TRUE(std::isnan(kv::softmax_exp(std::numeric_limits<float>::quiet_NaN())));
}

TEST(SoftmaxExp, EverySimdTableGivesTheScalarBits) {
  const std::vector<float> x = sweep();
  const auto tables = kvtest::simd_tables();
  if (tables.empty()) GTEST_SKIP() << "no SIMD attention level on this CPU";
  for (const auto& t : tables) {
    // Shifted by a maximum as the softmax does, at every length mod 16 (the tails).
    for (float m : {0.0f, 3.5f, -2.25f})
      for (std::uint32_t len : {1u, 7u, 8u, 15u, 16u, 17u, 33u, static_cast<std::uint32_t>(x.size())}) {
        std::vector<float> y(x.begin(), x.begin() + std::min<std::size_t>(len, x.size()));
        t.k->exp_shifted(y.data(), static_cast<std::uint32_t>(y.size()), m);
        for (std::size_t i = 0; i < y.size(); ++i) {
          const float want = kv::softmax_exp(x[i] - m);
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(y[i])) << t.name << " x = " << x[i];
            continue;
          }
          ASSERT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(want))
              << t.name << " x = " << x[i] << " m = " << m;
        }
      }
  }
}

}  // namespace
