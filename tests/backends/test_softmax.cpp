// softmax: each row's probabilities exactly as Backend::softmax defines them (the largest number,
// f32 exponentials, their sum in double in index order, one f32 reciprocal), the same bits for any
// thread count and SIMD level, in place or not; bad arguments refused with the reason.
#include <cmath>
#include <cstring>
#include <limits>

#include "cpu_fixture.hpp"

using namespace cpu_test;

namespace {

class Softmax : public OpTest {};
CPU_OP_TEST_SUITE(Softmax);

std::vector<float> reference(const std::vector<float>& x, std::int64_t n) {
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r * n < x.size(); ++r) {
    const float* in = x.data() + r * n;
    float* out = y.data() + r * n;
    float m = -std::numeric_limits<float>::infinity();
    for (std::int64_t i = 0; i < n; ++i)
      if (!std::isnan(in[i])) m = std::max(m, in[i]);
    double s = 0;
    for (std::int64_t i = 0; i < n; ++i) s += out[i] = std::exp(in[i] - m);
    const auto inv = static_cast<float>(1.0 / s);
    for (std::int64_t i = 0; i < n; ++i) out[i] *= inv;
  }
  return y;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

TEST_P(Softmax, EqualsItsDefinitionBitForBit) {
  const std::int64_t n = 151936, rows = 4;  // Qwen3's vocabulary
  auto x = random_floats(static_cast<std::size_t>(n * rows), -30.0f, 30.0f, 91);
  x[5] = std::numeric_limits<float>::quiet_NaN();  // ignored by the maximum; its own entry NaN
  x[n + 9] = -std::numeric_limits<float>::infinity();  // probability 0
  const auto want = reference(x, n);
  std::vector<float> y(x.size());
  ASSERT_TRUE(backend->softmax(view(x, n, rows), view(y, n, rows)).ok());
  EXPECT_TRUE(same_bits(y, want));
  EXPECT_TRUE(std::isnan(y[5]));
  EXPECT_EQ(y[n + 9], 0.0f);
  double total = 0;
  for (std::int64_t i = 0; i < n; ++i) total += y[std::size_t(n + i)];
  EXPECT_NEAR(total, 1.0, 1e-5);
  // In place: the same bits.
  ASSERT_TRUE(backend->softmax(view(x, n, rows), view(x, n, rows)).ok());
  EXPECT_TRUE(same_bits(x, want));
}

TEST_P(Softmax, BadArgumentsAreRefused) {
  std::vector<float> x(16), y(16);
  const std::string p = "cpu backend: softmax: ";
  EXPECT_EQ(backend->softmax(view(x, 8, 2), view(y, 16)).message(), p + "y has shape [16]; expected [8, 2] like x");
  EXPECT_EQ(backend->softmax(view(x, 8, 2), graft::f32_view(x.data() + 1, 8, 2)).message(), p + "y overlaps x without being x");
}

}  // namespace
