// Q8_K activation quantization against an independent statement of ggml's quantize_row_q8_K_ref
// (std::nearbyint in the default rounding mode is round half to even, as nearest_int).
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "q8k_activations.hpp"

namespace graft::quant {
namespace {

struct Expected {
  std::vector<std::int8_t> qs;
  std::vector<float> d;
  std::vector<std::int16_t> bsums;
};

Expected reference(const std::vector<float>& x) {
  Expected e;
  const std::size_t nb = x.size() / 256;
  e.qs.assign(x.size(), 0);
  e.d.assign(nb, 0.0f);
  e.bsums.assign(nb * 16, 0);
  for (std::size_t b = 0; b < nb; ++b) {
    const float* v = x.data() + b * 256;
    std::size_t arg = 0;
    for (std::size_t j = 1; j < 256; ++j)
      if (std::fabs(v[j]) > std::fabs(v[arg])) arg = j;
    if (v[arg] == 0.0f) continue;
    const float iscale = -127.0f / v[arg];
    for (std::size_t j = 0; j < 256; ++j) {
      const float q = std::nearbyint(iscale * v[j]);
      e.qs[b * 256 + j] = static_cast<std::int8_t>(std::fmin(q, 127.0f));
      e.bsums[b * 16 + j / 16] = static_cast<std::int16_t>(e.bsums[b * 16 + j / 16] + e.qs[b * 256 + j]);
    }
    e.d[b] = 1.0f / iscale;
  }
  return e;
}

TEST(Q8KActivations, MatchesGgmlReferenceOnGaussianRowsWithZeroAndTieBlocks) {
  constexpr std::int64_t k = 1024;
  std::mt19937 rng(7);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(k);
  for (auto& v : x) v = g(rng);
  for (int j = 256; j < 512; ++j) x[j] = 0.0f;  // an all-zero block: d = 0, quants and sums 0
  // A block whose largest magnitude is negative (max = -127 gives iscale = 1) and whose values
  // are halves, to exercise the tie rule.
  for (int j = 512; j < 768; ++j) x[j] = static_cast<float>((j % 7) - 3) + 0.5f;
  x[512] = -127.0f;
  std::vector<std::int8_t> qs(k);
  std::vector<float> d(k / 256);
  std::vector<std::int16_t> bsums(k / 16);
  quantize_q8k_row(x.data(), k, qs.data(), d.data(), bsums.data());
  const Expected e = reference(x);
  EXPECT_EQ(qs, e.qs);
  EXPECT_EQ(d, e.d);
  EXPECT_EQ(bsums, e.bsums);
  EXPECT_EQ(d[1], 0.0f);
  EXPECT_EQ(d[2], 1.0f);
  // x[512 + i] = ((1 + i) % 7) - 3 + 0.5 with iscale 1: -0.5 -> 0, 2.5 -> 2, 3.5 -> 4, -2.5 -> -2.
  EXPECT_EQ(qs[513], 0);
  EXPECT_EQ(qs[516], 2);
  EXPECT_EQ(qs[517], 4);
  EXPECT_EQ(qs[518], -2);
}

}  // namespace
}  // namespace graft::quant
