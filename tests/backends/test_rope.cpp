// rope: NORM (llama) and NEOX (qwen3) pairings against a double-precision reference, ggml's float
// numerics bit for bit, partial rotation (n_rot < head_dim) and in-place use.
#include "cpu_fixture.hpp"

using namespace cpu_test;
using graft::RopeParams;

namespace {

// ggml computes theta_i = pos * theta_scale^i in float by repeated multiplication, so the angle
// of pair i carries about (i + 1) roundings of relative error; cos/sin and the rotation add a
// few ulp of the pair's magnitude.
constexpr double kRopeAngleRelTolPerStep = 1.2e-7;  // 2 ulp per multiplication
constexpr double kRopeAbsTol = 6e-7;                // relative to |x0| + |x1|

constexpr std::int64_t kHeadDim = 128, kHeads = 32, kTokens = 7;
const std::vector<std::int32_t> kPositions = {0, 1, 2, 17, 100, 1000, 4095};

struct Pair {
  std::size_t a, b;
};
Pair pair_dims(std::size_t i, std::size_t n_rot, bool neox) { return neox ? Pair{i, i + n_rot / 2} : Pair{2 * i, 2 * i + 1}; }

// Plain-loop double reference. Also returns per element the tolerance the float angles allow.
std::vector<double> reference(const std::vector<float>& x, std::int64_t head_dim, std::int64_t heads,
                              const std::vector<std::int32_t>& pos, const RopeParams& p, std::vector<double>& tol) {
  std::vector<double> y(x.begin(), x.end());
  tol.assign(x.size(), 0.0);
  const auto n_rot = static_cast<std::size_t>(p.n_rot);
  for (std::size_t t = 0; t < pos.size(); ++t)
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::size_t row = (t * heads + h) * head_dim;
      for (std::size_t i = 0; i < n_rot / 2; ++i) {
        const double theta = pos[t] * static_cast<double>(p.freq_scale) *
                             std::pow(static_cast<double>(p.freq_base), -2.0 * i / static_cast<double>(n_rot));
        const auto [a, b] = pair_dims(i, n_rot, p.neox);
        const double x0 = x[row + a], x1 = x[row + b];
        y[row + a] = x0 * std::cos(theta) - x1 * std::sin(theta);
        y[row + b] = x0 * std::sin(theta) + x1 * std::cos(theta);
        tol[row + a] = tol[row + b] =
            (std::fabs(x0) + std::fabs(x1)) * (std::fabs(theta) * (i + 1) * kRopeAngleRelTolPerStep + kRopeAbsTol);
      }
    }
  return y;
}

// ggml-cpu's rope for one row, transcribed: float theta_scale = powf(base, -2.0f/n_dims); theta
// starts at (float)pos, cache[i] = cosf/sinf(freq_scale * theta), theta *= theta_scale; then
// x0*cos - x1*sin, x0*sin + x1*cos (this file is built with -ffp-contract=off, like the plugin).
std::vector<float> ggml_rope(const std::vector<float>& x, std::int64_t head_dim, std::int64_t heads,
                             const std::vector<std::int32_t>& pos, const RopeParams& p) {
  std::vector<float> y = x;
  const float theta_scale = powf(p.freq_base, -2.0f / p.n_rot);
  for (std::size_t t = 0; t < pos.size(); ++t) {
    std::vector<float> cache(static_cast<std::size_t>(head_dim));
    float theta = static_cast<float>(pos[t]);
    for (std::int64_t i0 = 0; i0 < head_dim; i0 += 2) {
      cache[i0] = cosf(p.freq_scale * theta);
      cache[i0 + 1] = sinf(p.freq_scale * theta);
      theta *= theta_scale;
    }
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::size_t row = (t * heads + h) * head_dim;
      for (std::int32_t i0 = 0; i0 < p.n_rot; i0 += 2) {
        const auto [a, b] = pair_dims(i0 / 2, p.n_rot, p.neox);
        const float c = cache[i0], s = cache[i0 + 1];
        const float x0 = x[row + a], x1 = x[row + b];
        y[row + a] = x0 * c - x1 * s;
        y[row + b] = x0 * s + x1 * c;
      }
    }
  }
  return y;
}

void expect_close(const std::vector<float>& y, const std::vector<double>& ref, const std::vector<double>& tol,
                  const std::string& what) {
  std::size_t bad = 0;
  for (std::size_t i = 0; i < y.size(); ++i)
    if (!(std::fabs(y[i] - ref[i]) <= tol[i]) && bad++ < 5)  // tol 0: passed-through dims, exact
      ADD_FAILURE() << what << ": element " << i << " = " << y[i] << ", reference " << ref[i] << " tol " << tol[i];
  EXPECT_EQ(bad, 0u) << what;
}

RopeParams params(std::int32_t n_rot, bool neox, float base, float scale = 1.0f) {
  RopeParams p;
  p.n_rot = n_rot;
  p.neox = neox;
  p.freq_base = base;
  p.freq_scale = scale;
  return p;
}

class Rope : public OpTest {};
CPU_OP_TEST_SUITE(Rope);

TEST_P(Rope, NormAndNeoxMatchTheReference) {
  auto x = random_floats(kHeadDim * kHeads * kTokens, -2.0f, 2.0f, 31);
  for (bool neox : {false, true})
    for (float base : {10000.0f, 1000000.0f}) {
      const RopeParams p = params(kHeadDim, neox, base);
      std::vector<float> y(x.size());
      ASSERT_TRUE(backend->rope(view(x, kHeadDim, kHeads, kTokens), idx(kPositions), p,
                                view(y, kHeadDim, kHeads, kTokens))
                      .ok());
      std::vector<double> tol;
      const auto ref = reference(x, kHeadDim, kHeads, kPositions, p, tol);
      expect_close(y, ref, tol, std::string(neox ? "neox" : "norm") + " base " + std::to_string(base));
    }
}

TEST_P(Rope, MatchesGgmlFloatNumericsBitForBit) {
  auto x = random_floats(kHeadDim * kHeads * kTokens, -2.0f, 2.0f, 32);
  for (bool neox : {false, true})
    for (std::int32_t n_rot : {128, 64})
      for (float scale : {1.0f, 0.25f}) {
        const RopeParams p = params(n_rot, neox, 1000000.0f, scale);
        std::vector<float> y(x.size());
        ASSERT_TRUE(backend->rope(view(x, kHeadDim, kHeads, kTokens), idx(kPositions), p,
                                  view(y, kHeadDim, kHeads, kTokens))
                        .ok());
        EXPECT_EQ(first_bit_difference(y, ggml_rope(x, kHeadDim, kHeads, kPositions, p)), -1)
            << (neox ? "neox" : "norm") << " n_rot " << n_rot << " freq_scale " << scale;
      }
}

// Hand-computed: a unit vector on dim 1, position 1, head_dim = n_rot = 4, base 10000.
// NORM pairs (0,1) at theta_0 = 1 rad; NEOX pairs (1,3) at theta_1 = 10000^(-1/2) = 0.01 rad.
// Swapping the two modes fails both expectations.
TEST_P(Rope, NormAndNeoxPairDifferentDims) {
  const std::int32_t pos = 1;
  std::vector<float> x = {0, 1, 0, 0}, y(4);
  ASSERT_TRUE(backend->rope(view(x, 4), idx(&pos, 1), params(4, false, 10000.0f), view(y, 4)).ok());
  EXPECT_NEAR(y[0], -std::sin(1.0), 1e-6);
  EXPECT_NEAR(y[1], std::cos(1.0), 1e-6);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_EQ(y[3], 0.0f);
  ASSERT_TRUE(backend->rope(view(x, 4), idx(&pos, 1), params(4, true, 10000.0f), view(y, 4)).ok());
  EXPECT_EQ(y[0], 0.0f);
  EXPECT_NEAR(y[1], std::cos(0.01), 1e-6);
  EXPECT_EQ(y[2], 0.0f);
  EXPECT_NEAR(y[3], std::sin(0.01), 1e-6);
}

TEST_P(Rope, PartialRotationLeavesTheRestUntouched) {
  const std::int32_t n_rot = 32;
  auto x = random_floats(kHeadDim * kHeads * kTokens, -2.0f, 2.0f, 33);
  for (bool neox : {false, true}) {
    const RopeParams p = params(n_rot, neox, 10000.0f);
    std::vector<float> y(x.size(), 99.0f);
    ASSERT_TRUE(backend->rope(view(x, kHeadDim, kHeads, kTokens), idx(kPositions), p,
                              view(y, kHeadDim, kHeads, kTokens))
                    .ok());
    std::vector<double> tol;
    const auto ref = reference(x, kHeadDim, kHeads, kPositions, p, tol);
    expect_close(y, ref, tol, neox ? "neox n_rot 32" : "norm n_rot 32");
    for (std::size_t r = 0; r < static_cast<std::size_t>(kHeads * kTokens); ++r)
      for (std::size_t d = n_rot; d < kHeadDim; ++d)
        ASSERT_EQ(bits(y[r * kHeadDim + d]), bits(x[r * kHeadDim + d])) << "row " << r << " dim " << d;
  }
}

TEST_P(Rope, InPlaceGivesTheSameBits) {
  for (std::int32_t n_rot : {128, 96}) {
    auto x = random_floats(kHeadDim * kHeads * kTokens, -2.0f, 2.0f, 34);
    const RopeParams p = params(n_rot, true, 1000000.0f);
    std::vector<float> y(x.size());
    ASSERT_TRUE(backend->rope(view(x, kHeadDim, kHeads, kTokens), idx(kPositions), p,
                              view(y, kHeadDim, kHeads, kTokens))
                    .ok());
    ASSERT_TRUE(backend->rope(view(x, kHeadDim, kHeads, kTokens), idx(kPositions), p,
                              view(x, kHeadDim, kHeads, kTokens))
                    .ok());
    EXPECT_EQ(first_bit_difference(x, y), -1) << "n_rot " << n_rot;
  }
}

TEST_P(Rope, PositionZeroIsTheIdentity) {
  auto x = random_floats(kHeadDim * kHeads, -2.0f, 2.0f, 35);
  const std::int32_t pos = 0;
  for (bool neox : {false, true}) {
    std::vector<float> y(x.size());
    ASSERT_TRUE(backend->rope(view(x, kHeadDim, kHeads), idx(&pos, 1), params(kHeadDim, neox, 10000.0f),
                              view(y, kHeadDim, kHeads))
                    .ok());
    EXPECT_EQ(first_bit_difference(x, y), -1);
  }
}

}  // namespace
