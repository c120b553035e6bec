// Q8_K activation quantization against an independent statement of ggml's quantize_row_q8_K_ref
// (std::nearbyint in the default rounding mode is round half to even, as nearest_int).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "activations/q8k_activations.hpp"
#include "quant_test_util.hpp"

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

struct Row {
  std::vector<std::int8_t> qs;
  std::vector<float> d;
  std::vector<std::int16_t> bsums;
};

using RowFn = void (*)(const float*, std::int64_t, std::int8_t*, float*, std::int16_t*) noexcept;

Row quantize_with(RowFn fn, const std::vector<float>& x) {
  const auto k = static_cast<std::int64_t>(x.size());
  Row r{std::vector<std::int8_t>(x.size(), 99), std::vector<float>(x.size() / 256, 99.0f),
        std::vector<std::int16_t>(x.size() / 16, 99)};
  fn(x.data(), k, r.qs.data(), r.d.data(), r.bsums.data());
  return r;
}

// Blocks meant to catch every way a vector max, product, rounding or cast could drift from the
// scalar's: Gaussian, all zero (+0 and -0), equal magnitudes of both signs (the first wins),
// +-max at either end, half-integer products (round half to even), values near FLT_MAX,
// denormals (iscale overflows to infinity), infinities and NaNs.
std::vector<float> hard_blocks() {
  std::mt19937 rng(11);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<std::vector<float>> blocks;
  for (int i = 0; i < 8; ++i) {
    std::vector<float> v(256);
    for (auto& e : v) e = g(rng) * std::ldexp(1.0f, i * 7 - 20);
    blocks.push_back(v);
  }
  blocks.push_back(std::vector<float>(256, 0.0f));
  blocks.push_back(std::vector<float>(256, -0.0f));
  for (int pos : {0, 7, 100, 255}) {
    std::vector<float> v(256);
    for (auto& e : v) e = g(rng);
    v[pos] = -5.0f;
    v[(pos + 37) % 256] = 5.0f;  // the same magnitude: whichever comes first is max
    blocks.push_back(v);
    for (auto& e : v) e = -e;
    blocks.push_back(v);
  }
  {
    std::vector<float> v(256);
    for (int j = 0; j < 256; ++j) v[j] = static_cast<float>((j % 255) - 127) + (j % 2 ? 0.5f : 0.0f);
    v[3] = 127.0f;
    blocks.push_back(v);
  }
  for (float big : {3.0e38f, std::numeric_limits<float>::max(), 1.0e-40f, std::numeric_limits<float>::denorm_min(),
                    1.0e-38f, std::numeric_limits<float>::infinity()}) {
    std::vector<float> v(256);
    for (auto& e : v) e = g(rng) * (std::isinf(big) ? 1.0f : big / 4.0f);
    v[17] = -big;
    v[200] = big / 3.0f;
    blocks.push_back(v);
  }
  {
    std::vector<float> v(256);
    for (auto& e : v) e = g(rng);
    v[0] = std::numeric_limits<float>::quiet_NaN();
    v[50] = -std::numeric_limits<float>::quiet_NaN();
    blocks.push_back(v);
  }
  std::vector<float> x;
  for (const auto& v : blocks) x.insert(x.end(), v.begin(), v.end());
  return x;
}

void expect_same_bits(const Row& got, const Row& want, const char* what) {
  EXPECT_EQ(got.qs, want.qs) << what;
  EXPECT_EQ(got.bsums, want.bsums) << what;
  ASSERT_EQ(got.d.size(), want.d.size());
  EXPECT_EQ(std::memcmp(got.d.data(), want.d.data(), got.d.size() * sizeof(float)), 0) << what;
}

TEST(Q8KActivations, SimdRowsMatchScalarBitForBitOnHardBlocks) {
  const std::vector<float> x = hard_blocks();
  const Row want = quantize_with(&quantize_q8k_row, x);
  // The reference agrees where it is defined (the 19 finite, well-scaled blocks come first).
  const Expected ref = reference(std::vector<float>(x.begin(), x.begin() + 19 * 256));
  EXPECT_EQ(std::vector<std::int8_t>(want.qs.begin(), want.qs.begin() + 19 * 256), ref.qs);
  if (!cpu_supports(SimdLevel::avx2)) GTEST_SKIP() << "no AVX2";
  expect_same_bits(quantize_with(&quantize_q8k_row_avx2, x), want, "avx2");
  if (!cpu_supports(SimdLevel::avx512)) GTEST_SKIP() << "no AVX-512";
  expect_same_bits(quantize_with(&quantize_q8k_row_avx512, x), want, "avx512");
}

// The column-pair layout holds each pair's quants (chunks of 32 interleaved), sums and repeated
// scales per block; the sums of 32, when asked for, are the sums of 16 two by two.
TEST(Q8KActivations, PairLayoutCopiesBothColumnsPerBlock) {
  constexpr std::int64_t n = 5, k = 768;
  std::mt19937 rng(3);
  std::normal_distribution<float> g(0.0f, 1.0f);
  std::vector<float> x(n * k);
  for (auto& v : x) v = g(rng);
  Q8KActivations a;
  quantize_q8k_activations(*quant_test::cpu(1), SimdLevel::scalar, x.data(), n, k, true, true, a);
  ASSERT_EQ(a.n_pairs, 2);
  for (std::int64_t p = 0; p < 2; ++p)
    for (std::int64_t b = 0; b < 3; ++b) {
      const std::int8_t* blk = a.pair_block(p, b);
      for (int h = 0; h < 2; ++h) {
        for (int j = 0; j < 8; ++j)
          EXPECT_EQ(std::memcmp(blk + 64 * j + 32 * h, a.block_qs(2 * p + h, b) + 32 * j, 32), 0) << "chunk " << j;
        EXPECT_EQ(std::memcmp(blk + 512 + 32 * h, a.block_bsums(2 * p + h, b), 32), 0);
        for (int i = 0; i < 8; ++i)
          EXPECT_EQ(a.block_sums32(2 * p + h, b)[i], a.block_bsums(2 * p + h, b)[2 * i] + a.block_bsums(2 * p + h, b)[2 * i + 1]);
        std::int32_t lanes[8] = {};
        for (int e = 0; e < 256; ++e) lanes[(e % 32) / 4] += a.block_qs(2 * p + h, b)[e] * Q8KActivations::kLaneBias;
        EXPECT_EQ(std::memcmp(blk + 640 + 32 * h, lanes, 32), 0);
        for (int l = 0; l < 8; ++l) {
          float s;
          std::memcpy(&s, blk + 576 + 32 * h + 4 * l, 4);
          EXPECT_EQ(s, a.scale(2 * p + h, b));
        }
      }
    }
  if (cpu_supports(SimdLevel::avx512)) {  // the vpdpbusd lane sums and the AVX-512 rows: same bytes
    Q8KActivations v;
    quantize_q8k_activations(*quant_test::cpu(1), SimdLevel::avx512, x.data(), n, k, true, true, v);
    EXPECT_EQ(v.pairs, a.pairs);
  }
  Q8KActivations none;
  quantize_q8k_activations(*quant_test::cpu(1), SimdLevel::scalar, x.data(), n, k, false, false, none);
  EXPECT_EQ(none.n_pairs, 0);
  EXPECT_TRUE(none.sums32.empty());
  EXPECT_EQ(none.qs, a.qs);
}

}  // namespace
}  // namespace graft::quant
