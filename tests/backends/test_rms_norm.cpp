// rms_norm against a double-precision reference, at the shapes the models use.
#include "cpu_fixture.hpp"

using namespace cpu_test;

namespace {

// Float squares, a rounded mean, a float reciprocal square root and two float products: a few
// ulp of the result.
constexpr double kRmsNormRelTol = 6e-7;
constexpr float kEps = 1e-6f;

std::vector<double> reference(const std::vector<float>& x, const std::vector<float>& w, std::size_t n, float eps) {
  std::vector<double> y(x.size());
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    double ss = 0;
    for (std::size_t i = 0; i < n; ++i) ss += static_cast<double>(x[r * n + i]) * x[r * n + i];
    const double inv = 1.0 / std::sqrt(ss / static_cast<double>(n) + eps);
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * inv * w[i];
  }
  return y;
}

// ggml-cpu's rms_norm followed by its mul by the weight, transcribed: float squares summed in
// order into a double, mean rounded to float, scale = 1.0f/sqrtf(mean + eps), (x*scale)*w.
std::vector<float> ggml_rms_norm(const std::vector<float>& x, const std::vector<float>& w, std::size_t n, float eps) {
  std::vector<float> y(x.size());
  for (std::size_t r = 0; r < x.size() / n; ++r) {
    double sum = 0.0;
    for (std::size_t i = 0; i < n; ++i) sum += static_cast<double>(x[r * n + i] * x[r * n + i]);
    const float mean = static_cast<float>(sum / static_cast<double>(n));
    const float scale = 1.0f / sqrtf(mean + eps);
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] = x[r * n + i] * scale;
    for (std::size_t i = 0; i < n; ++i) y[r * n + i] = y[r * n + i] * w[i];
  }
  return y;
}

void expect_close(const std::vector<float>& y, const std::vector<double>& ref, const char* what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!(std::fabs(y[i] - ref[i]) <= kRmsNormRelTol * std::fabs(ref[i]) + 1e-30) && bad++ < 5)
      ADD_FAILURE() << what << ": element " << i << " = " << y[i] << ", reference " << ref[i];
  EXPECT_EQ(bad, 0u) << what;
}

class RmsNorm : public OpTest {};
CPU_OP_TEST_SUITE(RmsNorm);

TEST_P(RmsNorm, HiddenRowsMatchTheReference) {
  for (std::int64_t n : {1024, 4096}) {
    const std::int64_t rows = 7;
    auto x = random_floats(n * rows, -3.0f, 3.0f, 11);
    x[5] = 40.0f;  // an outlier, as real activations have
    auto w = random_floats(n, 0.5f, 1.5f, 12);
    std::vector<float> y(x.size());
    ASSERT_TRUE(backend->rms_norm(view(x, n, rows), view(w, n), kEps, view(y, n, rows)).ok());
    expect_close(y, reference(x, w, n, kEps), n == 1024 ? "hidden 1024" : "hidden 4096");
  }
}

TEST_P(RmsNorm, PerHeadRowsAsQwen3UsesIt) {
  // q of 32 heads x 7 tokens normalized per head: viewed as [head_dim, n_heads * n_tokens].
  const std::int64_t head_dim = 128, rows = 32 * 7;
  auto x = random_floats(head_dim * rows, -2.0f, 2.0f, 13);
  auto w = random_floats(head_dim, 0.1f, 2.0f, 14);
  std::vector<float> y(x.size());
  ASSERT_TRUE(backend->rms_norm(view(x, head_dim, rows), view(w, head_dim), kEps, view(y, head_dim, rows)).ok());
  expect_close(y, reference(x, w, head_dim, kEps), "per head");
}

TEST_P(RmsNorm, OddLengthsExerciseTheTails) {
  for (std::int64_t n : {1, 7, 17, 33, 1000}) {
    auto x = random_floats(n * 3, -1.0f, 1.0f, 15);
    auto w = random_floats(n, -1.0f, 1.0f, 16);
    std::vector<float> y(x.size());
    ASSERT_TRUE(backend->rms_norm(view(x, n, 3), view(w, n), kEps, view(y, n, 3)).ok());
    expect_close(y, reference(x, w, n, kEps), ("n = " + std::to_string(n)).c_str());
  }
}

TEST_P(RmsNorm, MatchesGgmlBitForBit) {
  for (std::int64_t n : {4096, 128, 1000}) {
    auto x = random_floats(n * 9, -5.0f, 5.0f, 19);
    auto w = random_floats(n, -2.0f, 2.0f, 20);
    std::vector<float> y(x.size());
    ASSERT_TRUE(backend->rms_norm(view(x, n, 9), view(w, n), kEps, view(y, n, 9)).ok());
    EXPECT_EQ(first_bit_difference(y, ggml_rms_norm(x, w, n, kEps)), -1) << "n = " << n;
  }
}

TEST_P(RmsNorm, InPlaceGivesTheSameBits) {
  const std::int64_t n = 4096, rows = 5;
  auto x = random_floats(n * rows, -3.0f, 3.0f, 17);
  auto w = random_floats(n, 0.5f, 1.5f, 18);
  std::vector<float> y(x.size());
  ASSERT_TRUE(backend->rms_norm(view(x, n, rows), view(w, n), kEps, view(y, n, rows)).ok());
  ASSERT_TRUE(backend->rms_norm(view(x, n, rows), view(w, n), kEps, view(x, n, rows)).ok());
  EXPECT_EQ(first_bit_difference(x, y), -1);
}

TEST_P(RmsNorm, EpsDominatesAZeroRow) {
  const std::int64_t n = 64;
  std::vector<float> x(n, 0.0f), w(n, 1.0f), y(n, 7.0f);
  ASSERT_TRUE(backend->rms_norm(view(x, n), view(w, n), 1e-5f, view(y, n)).ok());
  for (float v : y) EXPECT_EQ(v, 0.0f);
}

}  // namespace
