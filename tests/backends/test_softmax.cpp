// softmax against a double-precision reference: attention-sized rows and a vocabulary row.
#include <limits>

#include "cpu_fixture.hpp"

using namespace cpu_test;

namespace {

// x*scale is rounded to float before exp (as ggml does), so an element's relative error grows
// with |x*scale - max| * 2^-24 (~2e-6 for a spread of 40) plus a few ulp of exp and the sum.
constexpr double kSoftmaxRelTol = 5e-6;
constexpr double kSoftmaxAbsTol = 1e-30;  // flushed tails far below anything that matters
constexpr double kSoftmaxSumTol = 1e-5;

std::vector<double> reference(const std::vector<float>& x, std::size_t n, float scale) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    double max = -INFINITY;
    for (std::size_t i = 0; i < n; ++i) max = std::max(max, static_cast<double>(x[r * n + i]) * scale);
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += y[r * n + i] = std::exp(static_cast<double>(x[r * n + i]) * scale - max);
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] /= sum;
  }
  return y;
}

void expect_close(const std::vector<float>& y, const std::vector<double>& ref, std::size_t n, const std::string& what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!(std::fabs(y[i] - ref[i]) <= kSoftmaxRelTol * ref[i] + kSoftmaxAbsTol) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " = " << y[i] << ", reference " << ref[i];
  EXPECT_EQ(bad, 0u) << what;
  for (std::size_t r = 0; r < y.size() / n; ++r) {
    double sum = 0;
    for (std::size_t i = 0; i < n; ++i) sum += y[r * n + i];
    EXPECT_NEAR(sum, 1.0, kSoftmaxSumTol) << what << " row " << r;
  }
}

class Softmax : public OpTest {};
CPU_OP_TEST_SUITE(Softmax);

TEST_P(Softmax, VocabularyRowMatchesTheReference) {
  const std::int64_t n = 151936, rows = 2;
  auto x = random_floats(n * rows, -15.0f, 25.0f, 21);
  std::vector<float> y(x.size());
  ASSERT_TRUE(backend->softmax(view(x, n, rows), 1.0f, view(y, n, rows)).ok());
  expect_close(y, reference(x, n, 1.0f), n, "vocab");
}

TEST_P(Softmax, AttentionRowsWithScaleMatchTheReference) {
  // scores of 32 heads x 7 queries over 300 keys, scaled by 1/sqrt(128)
  const std::int64_t n = 300, rows = 32 * 7;
  const float scale = 1.0f / std::sqrt(128.0f);
  auto x = random_floats(n * rows, -60.0f, 60.0f, 22);
  std::vector<float> y(x.size());
  ASSERT_TRUE(backend->softmax(view(x, n, rows), scale, view(y, n, rows)).ok());
  expect_close(y, reference(x, n, scale), n, "attention");
}

TEST_P(Softmax, MaskedAndTinyEntriesAndOddLengths) {
  for (std::int64_t n : {1, 5, 17, 31, 1000}) {
    auto x = random_floats(n * 3, -5.0f, 5.0f, 23);
    x[0] = -std::numeric_limits<float>::infinity();  // a masked position
    if (n > 2) x[2] = -200.0f;                       // exp underflows to (almost) zero
    if (n == 1) x[0] = 1.0f;
    std::vector<float> y(x.size());
    ASSERT_TRUE(backend->softmax(view(x, n, 3), 1.0f, view(y, n, 3)).ok());
    expect_close(y, reference(x, n, 1.0f), n, "n = " + std::to_string(n));
    if (n > 1) {
      EXPECT_EQ(y[0], 0.0f);
    }
  }
}

TEST_P(Softmax, InPlaceGivesTheSameBits) {
  const std::int64_t n = 4096, rows = 3;
  auto x = random_floats(n * rows, -10.0f, 10.0f, 24);
  std::vector<float> y(x.size());
  ASSERT_TRUE(backend->softmax(view(x, n, rows), 0.5f, view(y, n, rows)).ok());
  ASSERT_TRUE(backend->softmax(view(x, n, rows), 0.5f, view(x, n, rows)).ok());
  EXPECT_EQ(first_bit_difference(x, y), -1);
}

}  // namespace
