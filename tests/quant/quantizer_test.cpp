// Q8_0 and Q4_0 reference quantizers: byte-identical to ggml's quantize_row_*_ref on random data and
// on edge cases, dequantization exactly as ggml's, and round-trip errors within the format's bound.
#include <cmath>
#include <cstring>

#include "ggml_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

using RefQuantizer = std::vector<std::uint8_t> (*)(const float*, std::int64_t);

RefQuantizer reference_for(const std::string& name) {
  return name == "q8_0" ? &quant_ref::quantize_q8_0 : &quant_ref::quantize_q4_0;
}

// Blocks of 32 that exercise every branch of the reference quantizers.
std::vector<float> edge_blocks() {
  std::vector<float> v;
  auto block = [&](auto fill) {
    for (int j = 0; j < 32; ++j) v.push_back(fill(j));
  };
  block([](int) { return 0.0f; });                                    // all zeros: d = 0, id = 0
  block([](int j) { return j == 5 ? -0.0f : 0.0f; });                 // signed zeros
  block([](int j) { return (j - 16) + 0.5f; });                        // halves: ties for Q8_0 when d = 1
  block([](int j) { return j == 0 ? 127.0f : (j % 2 ? 2.5f : -3.5f); });  // d = 1 exactly: roundf ties away
  block([](int j) { return j == 3 ? 8.0f : (j == 7 ? -8.0f : 0.25f * (j - 10)); });  // |max| tie: first (+) wins
  block([](int j) { return j == 3 ? -8.0f : (j == 7 ? 8.0f : 0.25f * (j - 10)); });  // |max| tie: first (-) wins
  block([](int j) { return j == 31 ? -1.0f : 0.001f * j; });           // negative max magnitude
  block([](int j) { return j == 31 ? 1.0f : -0.001f * j; });           // positive max magnitude
  block([](int j) { return -8.0f + 0.5f * j; });                       // Q4_0 codes landing on x.5 + 8.5
  block([](int j) { return 1e-30f * (j - 16); });                      // d underflows fp16 to zero or subnormal
  block([](int j) { return 7e4f * (j % 2 ? 1 : -1); });                // d overflows? 7e4/127 fits; Q4_0's 7e4/8 fits
  block([](int j) { return 1e6f * (j - 16); });                        // d beyond fp16: infinite scale
  block([](int j) { return j == 9 ? 3.0e-8f : 0.0f; });                // tiny single value
  return v;
}

void expect_matches_reference(const std::string& name, const std::vector<float>& x, std::int64_t k) {
  auto f = format(name);
  ASSERT_NE(f, nullptr);
  const auto rows = static_cast<std::int64_t>(x.size()) / k;
  const auto got = quantize(*f, x, k, rows);
  const auto want = reference_for(name)(x.data(), static_cast<std::int64_t>(x.size()));
  ASSERT_EQ(got.size(), want.size());
  const std::size_t bb = traits(*f).block_bytes;
  for (std::size_t i = 0; i < got.size(); i += bb)
    ASSERT_EQ(std::memcmp(got.data() + i, want.data() + i, bb), 0) << name << " block " << i / bb;
}

}  // namespace

TEST(Quantizers, RandomDataMatchesGgmlByteForByte) {
  auto x = gaussian(32 * 256, 1.0f, 11);  // 8192 values
  auto scaled = gaussian(32 * 64, 1e-3f, 12);
  x.insert(x.end(), scaled.begin(), scaled.end());
  for (const std::string name : {"q8_0", "q4_0"}) expect_matches_reference(name, x, 256);
}

TEST(Quantizers, EdgeCasesMatchGgmlByteForByte) {
  const auto x = edge_blocks();
  for (const std::string name : {"q8_0", "q4_0"}) expect_matches_reference(name, x, 32);
}

TEST(Quantizers, EdgeCaseValuesAreWhatGgmlStores) {
  const auto x = edge_blocks();
  auto q8 = format("q8_0");
  const auto b8 = quantize(*q8, x, 32, static_cast<std::int64_t>(x.size() / 32));
  // Block 3: d = 127 / 127 = 1 (fp16 0x3C00); roundf sends 2.5 to 3 and -3.5 to -4.
  EXPECT_EQ(b8[3 * 34] | (b8[3 * 34 + 1] << 8), 0x3C00);
  EXPECT_EQ(static_cast<std::int8_t>(b8[3 * 34 + 2 + 1]), 3);
  EXPECT_EQ(static_cast<std::int8_t>(b8[3 * 34 + 2 + 2]), -4);
  auto q4 = format("q4_0");
  const auto b4 = quantize(*q4, x, 32, static_cast<std::int64_t>(x.size() / 32));
  // Block 4: +8 comes first among |8|, so d = 8 / -8 = -1 (0xBC00) and +8 encodes as 0; -8 as 15 (clamped 16).
  EXPECT_EQ(b4[4 * 18] | (b4[4 * 18 + 1] << 8), 0xBC00);
  EXPECT_EQ(b4[4 * 18 + 2 + 3] & 15, 0);
  EXPECT_EQ(b4[4 * 18 + 2 + 7] & 15, 15);
  // Block 5: -8 first, d = +1; -8 encodes as 0 and +8 as 15 (16 clamped).
  EXPECT_EQ(b4[5 * 18] | (b4[5 * 18 + 1] << 8), 0x3C00);
  EXPECT_EQ(b4[5 * 18 + 2 + 3] & 15, 0);
  EXPECT_EQ(b4[5 * 18 + 2 + 7] & 15, 15);
  // All zeros: Q4_0's scale is 0.0f / -8 = -0.0 (fp16 0x8000) and every code 8; Q8_0 stores zeros.
  EXPECT_EQ(b4[0] | (b4[1] << 8), 0x8000);
  for (int j = 0; j < 16; ++j) EXPECT_EQ(b4[2 + j], 0x88);
  for (int j = 0; j < 34; ++j) EXPECT_EQ(b8[j], 0);
}

TEST(Quantizers, DequantizeIsGgmlsFormula) {
  const auto x = gaussian(32 * 64, 0.5f, 13);
  for (const std::string name : {"q8_0", "q4_0"}) {
    auto f = format(name);
    const auto q = quantize(*f, x, 32 * 64, 1);
    const auto y = dequantize(*f, q, 32 * 64);
    const std::size_t bb = traits(*f).block_bytes;
    for (std::size_t b = 0; b < 64; ++b) {
      const auto blk = name == "q8_0" ? quant_ref::q8_0_block(q.data() + b * bb) : quant_ref::q4_0_block(q.data() + b * bb);
      for (int j = 0; j < 32; ++j) ASSERT_EQ(y[b * 32 + j], static_cast<float>(blk.q[j]) * blk.d) << name << " " << b;
    }
  }
}

TEST(Quantizers, GaussianRoundTripWithinTheFormatBound) {
  // Per block the error is at most half a step (plus fp16 rounding of the scale): Q8_0 steps are
  // amax / 127, Q4_0 steps amax / 8 (and the far end of the range is clamped to 7 steps).
  const std::int64_t k = 4096;
  const auto x = gaussian(static_cast<std::size_t>(k), 1.0f, 14);
  struct Case {
    std::string name;
    double step_div;
    double rms_max;  // relative RMS error, a regression guard on typical data
  };
  for (const Case& c : {Case{"q8_0", 127.0, 0.007}, Case{"q4_0", 8.0, 0.12}}) {
    auto f = format(c.name);
    const auto y = dequantize(*f, quantize(*f, x, k, 1), k);
    double err2 = 0, sig2 = 0;
    for (std::int64_t b = 0; b < k / 32; ++b) {
      double amax = 0;
      for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(static_cast<double>(x[b * 32 + j])));
      // Plus the fp16 rounding of the scale, scaled by the largest code (|q| <= 127 or 8).
      const double bound = amax / c.step_div * (c.name == "q4_0" ? 1.0 : 0.5) + amax * 0x1p-10;
      for (int j = 0; j < 32; ++j) {
        const double e = std::fabs(static_cast<double>(y[b * 32 + j]) - x[b * 32 + j]);
        ASSERT_LE(e, bound) << c.name << " element " << b * 32 + j;
        err2 += e * e;
        sig2 += static_cast<double>(x[b * 32 + j]) * x[b * 32 + j];
      }
    }
    EXPECT_LT(std::sqrt(err2 / sig2), c.rms_max) << c.name;
  }
}

TEST(Quantizers, DenseRoundTripsAreExactOrWithinHalfAnUlp) {
  const auto x = gaussian(4096, 2.0f, 15);
  for (const std::string name : {"f32", "f16", "bf16"}) {
    auto f = format(name);
    const auto y = dequantize(*f, quantize(*f, x, 4096, 1), 4096);
    const double rel = name == "f32" ? 0.0 : name == "f16" ? 0x1p-11 : 0x1p-8;
    for (std::size_t i = 0; i < x.size(); ++i)
      ASSERT_LE(std::fabs(static_cast<double>(y[i]) - x[i]), rel * std::fabs(x[i]) + (name == "f16" ? 0x1p-25 : 0.0))
          << name << " " << i;
  }
}
