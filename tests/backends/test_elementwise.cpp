// add (with one-row broadcast) and silu_mul against double references; aliasing.
#include <limits>

#include "cpu_fixture.hpp"

using namespace cpu_test;

namespace {

// silu: exp (<= 2-3 ulp on the SIMD paths), 1 + e, a division and a product.
constexpr double kSiluMulRelTol = 6e-7;
constexpr double kSiluMulAbsTol = 1e-30;  // silu(g) for g << 0 underflows

constexpr std::int64_t kHidden = 4096, kFfn = 1024 * 3, kTokens = 7;

class Elementwise : public OpTest {};
CPU_OP_TEST_SUITE(Elementwise);

// A float sum is the correctly rounded double one: add is exact to the bit.
TEST_P(Elementwise, AddIsCorrectlyRounded) {
  for (std::int64_t n : {kHidden, std::int64_t{1024}, std::int64_t{13}}) {
    auto a = random_floats(n * kTokens, -100.0f, 100.0f, 41);
    auto b = random_floats(n * kTokens, -100.0f, 100.0f, 42);
    std::vector<float> sum(a.size());
    ASSERT_TRUE(backend->add(view(a, n, kTokens), view(b, n, kTokens), view(sum, n, kTokens)).ok());
    for (std::size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(sum[i], static_cast<float>(static_cast<double>(a[i]) + b[i])) << "n " << n << " i " << i;
  }
}

// b of one row applies to every row of a (a norm weight, a bias).
TEST_P(Elementwise, OneRowOfBIsBroadcastOverTheRows) {
  const std::int64_t n = 1024;
  auto a = random_floats(n * kTokens, -10.0f, 10.0f, 43);
  auto b = random_floats(n, -10.0f, 10.0f, 44);
  std::vector<float> sum(a.size());
  ASSERT_TRUE(backend->add(view(a, n, kTokens), view(b, n), view(sum, n, kTokens)).ok());
  for (std::size_t r = 0; r < kTokens; ++r)
    for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(sum[r * n + i], a[r * n + i] + b[i]);
}

TEST_P(Elementwise, AddInPlaceOnEitherInput) {
  const std::int64_t n = 1000;
  const auto a0 = random_floats(n * 3, -1.0f, 1.0f, 45);
  const auto b0 = random_floats(n * 3, -1.0f, 1.0f, 46);
  std::vector<float> expected(a0.size());
  auto a = a0, b = b0;
  ASSERT_TRUE(backend->add(view(a, n, 3), view(b, n, 3), view(expected, n, 3)).ok());
  ASSERT_TRUE(backend->add(view(a, n, 3), view(b, n, 3), view(a, n, 3)).ok());
  EXPECT_EQ(first_bit_difference(a, expected), -1) << "y == a";
  a = a0;
  ASSERT_TRUE(backend->add(view(a, n, 3), view(b, n, 3), view(b, n, 3)).ok());
  EXPECT_EQ(first_bit_difference(b, expected), -1) << "y == b";
}

std::vector<double> silu_mul_reference(const std::vector<float>& g, const std::vector<float>& u) {
  std::vector<double> y(g.size());
  for (std::size_t i = 0; i < g.size(); ++i) y[i] = g[i] / (1.0 + std::exp(-static_cast<double>(g[i]))) * u[i];
  return y;
}

void expect_silu_close(const std::vector<float>& y, const std::vector<double>& ref, const std::string& what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!(std::fabs(y[i] - ref[i]) <= kSiluMulRelTol * std::fabs(ref[i]) + kSiluMulAbsTol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " = " << y[i] << ", reference " << ref[i];
  EXPECT_EQ(bad, 0u) << what;
}

TEST_P(Elementwise, SiluMulMatchesTheReference) {
  for (std::int64_t n : {kFfn, std::int64_t{4096}, std::int64_t{21}}) {
    auto g = random_floats(n * kTokens, -20.0f, 20.0f, 47);
    auto u = random_floats(n * kTokens, -3.0f, 3.0f, 48);
    // the edges of exp(-g): overflow (g = -90), underflow (g = 90), zero, near both limits
    g[0] = 90.0f, g[1] = -90.0f, g[2] = 0.0f, g[3] = -87.0f, g[4] = 88.5f;
    std::vector<float> y(g.size());
    ASSERT_TRUE(backend->silu_mul(view(g, n, kTokens), view(u, n, kTokens), view(y, n, kTokens)).ok());
    expect_silu_close(y, silu_mul_reference(g, u), "n = " + std::to_string(n));
  }
}

TEST_P(Elementwise, SiluMulInPlaceOnGateOrUp) {
  const std::int64_t n = 3072;
  const auto g0 = random_floats(n * 2, -8.0f, 8.0f, 49);
  const auto u0 = random_floats(n * 2, -3.0f, 3.0f, 50);
  auto g = g0, u = u0;
  std::vector<float> expected(g.size());
  ASSERT_TRUE(backend->silu_mul(view(g, n, 2), view(u, n, 2), view(expected, n, 2)).ok());
  ASSERT_TRUE(backend->silu_mul(view(g, n, 2), view(u, n, 2), view(g, n, 2)).ok());
  EXPECT_EQ(first_bit_difference(g, expected), -1) << "y == gate";
  g = g0;
  ASSERT_TRUE(backend->silu_mul(view(g, n, 2), view(u, n, 2), view(u, n, 2)).ok());
  EXPECT_EQ(first_bit_difference(u, expected), -1) << "y == up";
}

}  // namespace
