// F16 and BF16 plugins convert exactly as ggml's GGML_FP32_TO_FP16 / GGML_FP32_TO_BF16 do: round to
// nearest even, overflow to infinity, ggml's NaN encodings; widening back is exact.
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "ggml_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

// About 1.2 million floats: a sweep over every bit pattern, a dense sweep over the fp16 range
// (subnormals and the overflow edge included), and hand-picked edges.
std::vector<float> conversion_inputs() {
  std::vector<float> v;
  for (std::uint64_t b = 0; b < (std::uint64_t{1} << 32); b += 7919) v.push_back(std::bit_cast<float>(static_cast<std::uint32_t>(b)));
  for (std::uint32_t b = 0x32800000u; b < 0x47900000u; b += 53) {  // 2^-26 .. above 65520
    v.push_back(std::bit_cast<float>(b));
    v.push_back(-std::bit_cast<float>(b));
  }
  const float edges[] = {0.0f, -0.0f, 1.0f, -1.0f, 65504.0f, 65519.996f, 65520.0f, -65520.0f, 65536.0f,
                         0x1p-14f, 0x1p-24f, 0x1p-25f, std::nextafter(0x1p-25f, 1.0f), 0x1.8p-24f, 0x1.4p-24f,
                         1.00048828125f /* 1 + 2^-11: tie, stays 1 */, 1.00146484375f /* 1 + 3*2^-11: tie, rounds up */,
                         std::numeric_limits<float>::max(), std::numeric_limits<float>::denorm_min(),
                         std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                         std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7F800001u),
                         std::bit_cast<float>(0xFFC12345u), 1.00390625f /* bf16 tie */, 1.01171875f};
  v.insert(v.end(), std::begin(edges), std::end(edges));
  return v;
}

void expect_conversions(const std::string& name, std::uint16_t (*ref)(float)) {
  auto f = format(name);
  ASSERT_NE(f, nullptr);
  const auto in = conversion_inputs();
  std::vector<std::uint16_t> out(in.size());
  ASSERT_TRUE(f->quantize(traits(*f).id, in.data(), out.data(), 1, static_cast<std::int64_t>(in.size()), nullptr).ok());
  std::size_t mismatches = 0;
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (out[i] == ref(in[i])) continue;
    if (++mismatches <= 5)
      ADD_FAILURE() << name << " of " << std::hexfloat << in[i] << " (0x" << std::hex
                    << std::bit_cast<std::uint32_t>(in[i]) << "): got 0x" << out[i] << ", ggml gives 0x" << ref(in[i]);
  }
  EXPECT_EQ(mismatches, 0u);
}

}  // namespace

TEST(Conversions, F32ToF16MatchesGgmlBitForBit) { expect_conversions("f16", &quant_ref::fp32_to_fp16); }

TEST(Conversions, F32ToBf16MatchesGgmlBitForBit) { expect_conversions("bf16", &quant_ref::fp32_to_bf16); }

TEST(Conversions, HandPickedFp16Results) {
  auto f = format("f16");
  const float in[] = {65519.996f, 65520.0f, 0x1p-25f, std::nextafter(0x1p-25f, 1.0f), 1.00048828125f,
                      1.00146484375f, std::numeric_limits<float>::quiet_NaN(), -0.0f};
  const std::uint16_t expected[] = {0x7BFF, 0x7C00, 0x0000, 0x0001, 0x3C00, 0x3C02, 0x7E00, 0x8000};
  std::uint16_t out[8];
  ASSERT_TRUE(f->quantize(type_id::f16, in, out, 1, 8, nullptr).ok());
  for (int i = 0; i < 8; ++i) EXPECT_EQ(out[i], expected[i]) << i;
}

TEST(Conversions, HandPickedBf16Results) {
  auto f = format("bf16");
  const float in[] = {1.00390625f, 1.01171875f, std::numeric_limits<float>::max(), std::bit_cast<float>(0x7F800001u),
                      std::bit_cast<float>(0x00018000u) /* subnormal tie: rounds to even, not flushed */};
  const std::uint16_t expected[] = {0x3F80, 0x3F82, 0x7F80, 0x7FC0, 0x0002};
  std::uint16_t out[5];
  ASSERT_TRUE(f->quantize(type_id::bf16, in, out, 1, 5, nullptr).ok());
  for (int i = 0; i < 5; ++i) EXPECT_EQ(out[i], expected[i]) << i;
}

TEST(Conversions, WideningEveryHalfIsExact) {
  std::vector<std::uint16_t> all(65536);
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
  for (const std::string name : {"f16", "bf16"}) {
    auto f = format(name);
    std::vector<float> out(all.size());
    ASSERT_TRUE(f->dequantize(traits(*f).id, all.data(), out.data(), 65536).ok());
    for (std::size_t i = 0; i < all.size(); ++i) {
      const float want = name == "f16" ? quant_ref::fp16_to_fp32(all[i]) : quant_ref::bf16_to_fp32(all[i]);
      if (std::isnan(want)) {
        EXPECT_TRUE(std::isnan(out[i])) << name << " " << i;
        continue;
      }
      ASSERT_EQ(std::bit_cast<std::uint32_t>(out[i]), std::bit_cast<std::uint32_t>(want)) << name << " 0x" << std::hex << i;
    }
  }
}

TEST(Conversions, F32IsACopy) {
  auto f = format("f32");
  const auto x = gaussian(1000, 3.0f, 7);
  std::vector<float> q(1000), back(1000);
  ASSERT_TRUE(f->quantize(type_id::f32, x.data(), q.data(), 10, 100, nullptr).ok());
  ASSERT_TRUE(f->dequantize(type_id::f32, q.data(), back.data(), 1000).ok());
  EXPECT_EQ(std::memcmp(back.data(), x.data(), 4000), 0);
}
