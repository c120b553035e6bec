// Q1_0 and Q2_0 reference quantizers against ggml's algorithms (bonsai_reference.hpp), byte for
// byte, on Gaussian data and edge blocks; the decoders; round-trip error bounds; and the format
// declarations and refusals, including the legacy group-128 Q2_0 layout.
#include <cmath>
#include <cstring>
#include <limits>

#include "bonsai_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

std::vector<std::uint8_t> reference(const std::string& name, const std::vector<float>& x) {
  const auto k = static_cast<std::int64_t>(x.size());
  return name == "q1_0" ? bonsai_ref::quantize_q1_0(x.data(), k) : bonsai_ref::quantize_q2_0(x.data(), k);
}

void expect_same_bytes(const std::string& name, const std::vector<float>& x, const std::string& what) {
  auto f = format(name);
  ASSERT_NE(f, nullptr);
  const auto k = static_cast<std::int64_t>(x.size());
  const auto got = quantize(*f, x, k, 1);
  const auto want = reference(name, x);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << name << " " << what << ": byte " << i << " of block " << i / 18;
}

}  // namespace

TEST(BonsaiQuantizer, MatchesGgmlOnGaussianData) {
  for (const std::string name : {"q1_0", "q2_0"})
    for (float sigma : {1.0f, 0.02f, 1e-6f, 3000.0f})  // ordinary, weight-like, fp16-subnormal d, large d
      expect_same_bytes(name, gaussian(128 * 96, sigma, 61), "sigma " + std::to_string(sigma));
}

TEST(BonsaiQuantizer, EdgeBlocks) {
  for (const std::string name : {"q1_0", "q2_0"}) {
    expect_same_bytes(name, std::vector<float>(128, 0.0f), "all zero");
    expect_same_bytes(name, std::vector<float>(128, -0.0f), "all negative zero");
    std::vector<float> ties(128);
    for (int j = 0; j < 128; ++j) {
      // Exact halves of the largest magnitude (roundf goes away from zero, nearbyint would not),
      // +-max both present, zeros of both signs, and values just either side of a half.
      const float pattern[] = {1.0f, -1.0f, 0.5f, -0.5f, 0.0f, -0.0f, 0.49999997f, -0.50000006f, 1.5f / 3.0f, -0.25f};
      ties[static_cast<std::size_t>(j)] = pattern[j % 10] * (j < 64 ? 1.0f : 96.0f);
    }
    expect_same_bytes(name, ties, "ties");
    std::vector<float> huge(128, 70000.0f);  // d overflows fp16 to infinity
    huge[3] = -1e5f;
    expect_same_bytes(name, huge, "fp16 overflow");
  }
}

TEST(BonsaiQuantizer, HandWorkedBlocks) {
  // Q2_0, max 1: 1 -> 2, -1 -> 0, 0.5 -> 2 (half away from zero), -0.5 -> 0, 0.2 -> 1.
  std::vector<float> x(64, 0.2f);
  x[0] = 1.0f, x[1] = -1.0f, x[2] = 0.5f, x[3] = -0.5f;
  const auto q2 = quantize(*format("q2_0"), x, 64, 1);
  EXPECT_EQ(q2[0], 0x00);
  EXPECT_EQ(q2[1], 0x3C);  // fp16(1.0)
  EXPECT_EQ(q2[2], 0x22);
  EXPECT_EQ(q2[3], 0x55);
  // Q1_0: mean |x| = 0.75, bit = x >= 0.
  std::vector<float> y(128, 0.5f);
  for (int j = 0; j < 128; j += 2) y[static_cast<std::size_t>(j)] = -1.0f;
  const auto q1 = quantize(*format("q1_0"), y, 128, 1);
  EXPECT_EQ(q1[0] | (q1[1] << 8), 0x3A00);  // fp16(0.75)
  EXPECT_EQ(q1[2], 0xAA);
  EXPECT_EQ(q1[17], 0xAA);
  // -0.0 counts as positive (and adds nothing to the mean: 95 / 128).
  y[2] = -0.0f;
  const auto q1z = quantize(*format("q1_0"), y, 128, 1);
  EXPECT_EQ(q1z[0] | (q1z[1] << 8), 0x39F0);  // fp16(0.7421875)
  EXPECT_EQ(q1z[2], 0xAE);                    // bits 1, 2, 3, 5, 7
}

TEST(BonsaiQuantizer, DequantizeDecodesEveryCode) {
  // Random bytes (Q2_0 code 3 included, which ggml's quantizer never writes) with finite scales.
  std::mt19937 rng(62);
  for (const std::string name : {"q1_0", "q2_0"}) {
    auto f = format(name);
    const std::int64_t k = 1024;
    std::vector<std::uint8_t> q(static_cast<std::size_t>(k / traits(*f).block_elems * 18));
    for (auto& b : q) b = static_cast<std::uint8_t>(rng());
    for (std::size_t b = 0; b < q.size(); b += 18) q[b + 1] &= 0x7B;  // exponent < 31: finite
    const auto y = dequantize(*f, q, k);
    const auto row = bonsai_ref::decode_row(name == "q1_0", q.data(), k);
    for (std::int64_t i = 0; i < k; ++i)
      ASSERT_EQ(y[static_cast<std::size_t>(i)],
                static_cast<float>(row.code[static_cast<std::size_t>(i)]) * row.d[static_cast<std::size_t>(i / row.block)])
          << name << " element " << i;
  }
}

TEST(BonsaiQuantizer, RoundTripErrorBounds) {
  const std::int64_t k = 128 * 64;
  const auto x = gaussian(static_cast<std::size_t>(k), 1.0f, 63);
  {
    // Q1_0 keeps the sign and replaces the magnitude by the block's mean |x| (to fp16 precision);
    // for Gaussian data that leaves sqrt(1 - 2 / pi) = 0.603 of the RMS.
    auto f = format("q1_0");
    const auto y = dequantize(*f, quantize(*f, x, k, 1), k);
    double err2 = 0, x2 = 0;
    for (std::int64_t b = 0; b < k / 128; ++b) {
      double mean = 0;
      for (int j = 0; j < 128; ++j) mean += std::fabs(x[static_cast<std::size_t>(b * 128 + j)]) / 128;
      for (int j = 0; j < 128; ++j) {
        const auto i = static_cast<std::size_t>(b * 128 + j);
        ASSERT_EQ(y[i] > 0, x[i] >= 0) << i;
        ASSERT_NEAR(std::fabs(y[i]), mean, mean * 0x1p-11 + 1e-6 * mean) << i;
        err2 += (y[i] - x[i]) * (y[i] - x[i]);
        x2 += x[i] * x[i];
      }
    }
    EXPECT_LT(std::sqrt(err2 / x2), 0.62);
  }
  {
    // Q2_0: within half a step of max |x| (plus the scale's fp16 rounding times the code).
    auto f = format("q2_0");
    const auto y = dequantize(*f, quantize(*f, x, k, 1), k);
    for (std::int64_t b = 0; b < k / 64; ++b) {
      double amax = 0;
      for (int j = 0; j < 64; ++j) amax = std::max(amax, std::fabs(static_cast<double>(x[static_cast<std::size_t>(b * 64 + j)])));
      for (int j = 0; j < 64; ++j) {
        const auto i = static_cast<std::size_t>(b * 64 + j);
        ASSERT_LE(std::fabs(static_cast<double>(y[i]) - x[i]), amax * (0.5 + 0x1p-11)) << i;
      }
    }
  }
}

TEST(BonsaiFormatApi, DeclaresGgmlIdsAndGeometry) {
  auto q1 = format("q1_0"), q2 = format("q2_0");
  ASSERT_NE(q1, nullptr);
  ASSERT_NE(q2, nullptr);
  EXPECT_EQ(traits(*q1).id, 41u);
  EXPECT_EQ(std::string(traits(*q1).name), "q1_0");
  EXPECT_EQ(traits(*q1).block_elems, 128u);
  EXPECT_EQ(traits(*q1).block_bytes, 18u);
  EXPECT_EQ(traits(*q2).id, 42u);
  EXPECT_EQ(std::string(traits(*q2).name), "q2_0");
  EXPECT_EQ(traits(*q2).block_elems, 64u);
  EXPECT_EQ(traits(*q2).block_bytes, 18u);
  EXPECT_NE(q2->kernels("cpu"), nullptr);
  EXPECT_EQ(q2->kernels("cuda"), nullptr);
}

TEST(BonsaiFormatApi, CheckTensor) {
  auto q1 = format("q1_0"), q2 = format("q2_0");
  const std::int64_t shape[] = {1024, 3};
  EXPECT_TRUE(q1->check_tensor(type_id::q1_0, shape, 2, 3 * 8 * 18).ok());
  EXPECT_TRUE(q2->check_tensor(type_id::q2_0, shape, 2, 3 * 16 * 18).ok());
  const std::int64_t short_row[] = {64, 3};
  EXPECT_EQ(q1->check_tensor(type_id::q1_0, short_row, 2, 3 * 18).message(),
            "q1_0 tensor: row length 64 is not a multiple of the block size 128");
  EXPECT_EQ(q1->check_tensor(type_id::q1_0, shape, 2, 100).message(), "q1_0 tensor: 100 bytes, expected 432 for its shape");
  EXPECT_EQ(q2->check_tensor(type_id::q2_0, shape, 2, 100).message(), "q2_0 tensor: 100 bytes, expected 864 for its shape");
  EXPECT_EQ(q2->check_tensor(type_id::q1_0, shape, 2, 864).message(), "q2_0 tensor: type id 41 is not 42 (q2_0)");
}

TEST(BonsaiFormatApi, Q2_0RefusesTheLegacyGroup128Layout) {
  // 1024 x 3 in the old layout: 8 blocks of 34 bytes per row.
  auto q2 = format("q2_0");
  const std::int64_t shape[] = {1024, 3};
  const Status st = q2->check_tensor(type_id::q2_0, shape, 2, 3 * 8 * 34);
  EXPECT_EQ(st.code(), Errc::unsupported);
  EXPECT_EQ(st.message(),
            "q2_0 tensor: 816 bytes is the legacy PrismML Q2_0 layout (34-byte blocks of 128, stored under id 42 "
            "before ggml's group-64 Q2_0); it is not supported: re-convert the model with current tools");
  // A row of 64 cannot be the legacy layout: the ordinary size message.
  const std::int64_t short_row[] = {64, 2};
  EXPECT_EQ(q2->check_tensor(type_id::q2_0, short_row, 2, 2 * 17).message(),
            "q2_0 tensor: 34 bytes, expected 36 for its shape");
}

TEST(BonsaiFormatApi, MatmulRefusesShortRows) {
  auto q1 = format("q1_0");
  std::vector<std::uint8_t> w(4 * 18);
  float x[64] = {}, y[4] = {};
  TensorView wv = weight_view(w.data(), traits(*q1), 128, 4);
  wv.ne[0] = 64;
  EXPECT_EQ(q1->kernels("cpu")->matmul(*cpu(1), wv, f32_view(x, 64, 1), f32_view(y, 4, 1)).message(),
            "q1_0 matmul: weight row length 64 is not a multiple of the block size 128");
}
