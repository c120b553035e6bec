// TQ2_0 and TQ1_0 quantizers: byte-identical to ggml's quantize_row_tq2_0_ref /
// quantize_row_tq1_0_ref (an independent statement in q8k_reference.hpp) on Gaussian rows and on
// edge blocks; the round-trip error is reported (ternary: the error is the format's, not ours).
#include <cmath>
#include <cstring>

#include "kquant_error.hpp"
#include "q8k_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

// Blocks of 256 that exercise lroundf's ties and the scale's edge cases.
std::vector<float> edge_blocks() {
  std::vector<float> v;
  auto block = [&](auto fill) {
    for (int j = 0; j < 256; ++j) v.push_back(fill(j));
  };
  block([](int) { return 0.0f; });                                            // d = 0, id = 0: all codes 1
  block([](int j) { return j == 17 ? -3.0f : 1.5f * ((j % 3) - 1); });        // x / d = +-0.5: ties away from zero
  block([](int j) { return j % 5 == 0 ? 1.0f : -1.0f; });                     // only +-amax
  block([](int j) { return 0.4999f * ((j % 3) - 1) + (j == 200 ? 1.0f : 0.0f); });  // just under the tie
  block([](int j) { return 1e-30f * (j - 128); });                           // d underflows fp16
  block([](int j) { return 1e6f * ((j % 3) - 1); });                          // d overflows fp16 to infinity
  return v;
}

void expect_identical(const std::string& f, const std::vector<float>& x) {
  auto fmt = format(f);
  ASSERT_NE(fmt, nullptr);
  const auto rows = static_cast<std::int64_t>(x.size() / 256);
  const auto got = quantize(*fmt, x, 256, rows);
  const auto want = q8k_ref::quantize_ternary(f, x.data(), static_cast<std::int64_t>(x.size()));
  ASSERT_EQ(got.size(), want.size());
  const std::size_t bb = q8k_ref::block_bytes(f);
  for (std::size_t i = 0; i < got.size(); i += bb)
    ASSERT_EQ(std::memcmp(got.data() + i, want.data() + i, bb), 0) << f << " block " << i / bb;
}

}  // namespace

TEST(Ternary, QuantizersMatchGgmlByteForByte) {
  auto x = gaussian(256 * 40, 1.0f, 101);
  const auto edges = edge_blocks();
  x.insert(x.end(), edges.begin(), edges.end());
  for (const std::string f : {"tq2_0", "tq1_0"}) expect_identical(f, x);
}

TEST(Ternary, EdgeBlockCodes) {
  const auto x = edge_blocks();
  auto fmt = format("tq2_0");
  const auto q = quantize(*fmt, x, 256, 6);
  // Block 0: every code 1 (0b01010101) and d = +0.
  for (int j = 0; j < 64; ++j) EXPECT_EQ(q[static_cast<std::size_t>(j)], 0x55) << j;
  EXPECT_EQ(q[64] | (q[65] << 8), 0);
  // Block 1: d = 3; x = 1.5 -> 0.5 rounds away to code 2, -1.5 to code 0; element 17 = -3 -> code 0.
  const auto y = dequantize(*fmt, q, 256 * 6);
  EXPECT_EQ(y[256 + 0], -3.0f);
  EXPECT_EQ(y[256 + 2], 3.0f);
  EXPECT_EQ(y[256 + 1], 0.0f);
  // Block 5: d = 1e6 overflows fp16 to infinity, as ggml stores it.
  EXPECT_EQ(q[5 * 66 + 64] | (q[5 * 66 + 65] << 8), 0x7C00);
  auto t1 = format("tq1_0");
  const auto y1 = dequantize(*t1, quantize(*t1, x, 256, 6), 256 * 6);
  for (int e = 0; e < 256; ++e) EXPECT_EQ(y1[256 + static_cast<std::size_t>(e)], y[256 + static_cast<std::size_t>(e)]) << e;
}

TEST(Ternary, RoundTripIsExactOnTernaryDataAndReportedOnOthers) {
  // Ternary weights {-a, 0, a} (what these formats are for) come back exactly (a an fp16 value).
  std::vector<float> t(256 * 8);
  std::mt19937 rng(103);
  for (std::size_t i = 0; i < t.size(); ++i) t[i] = 0.375f * static_cast<float>(static_cast<int>(rng() % 3) - 1);
  // On Gaussian and zoo weights the error is the format's (the quantizer is ggml's): a record, and
  // both formats must reconstruct the same values (same trits, same scale).
  const auto g = gaussian(256 * 32, 1.0f, 102);
  const auto z = kquant_error::zoo_weights(kquant_error::kZooTensors, 12);
  auto t2 = format("tq2_0"), t1 = format("tq1_0");
  const std::vector<float>* rows[] = {&t, &g, &z};
  for (const std::vector<float>* x : rows) {
    const auto n = static_cast<std::int64_t>(x->size());
    const auto y2 = dequantize(*t2, quantize(*t2, *x, 256, n / 256), n);
    const auto y1 = dequantize(*t1, quantize(*t1, *x, 256, n / 256), n);
    ASSERT_EQ(std::memcmp(y1.data(), y2.data(), y1.size() * 4), 0);
    double sse = 0, sig = 0;
    for (std::size_t i = 0; i < x->size(); ++i) {
      sse += (static_cast<double>(y2[i]) - (*x)[i]) * (static_cast<double>(y2[i]) - (*x)[i]);
      sig += static_cast<double>((*x)[i]) * (*x)[i];
    }
    const double rel = std::sqrt(sse / sig);
    std::printf("[ error    ] tq2_0/tq1_0 %s: relative rmse %.4f\n", x == &t ? "ternary" : x == &g ? "gaussian" : "zoo", rel);
    if (x == &t) EXPECT_EQ(sse, 0.0);
    else EXPECT_LT(rel, 0.85);  // regression guard: max-scaled ternary rounding leaves ~0.81 on bell-shaped data
  }
}
