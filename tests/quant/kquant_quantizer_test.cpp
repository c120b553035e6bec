// K-quant formats (Q4_K, Q5_K, Q6_K): dequantization bit for bit as ggml's on arbitrary blocks, and the
// quantizers' reconstruction error on Gaussian data and on the zoo model's real weights, no worse
// than kOptimumSlack x the simple per-block optimum of kquant_reference.hpp. The measured RMSEs
// are printed (and recorded as test properties) for docs/formats_kquants.md.
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>

#include "gguf/gguf_file.hpp"
#include "kquant_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

constexpr double kOptimumSlack = 1.10;  // the bound: at most 10% above the optimum's RMSE

struct KFormat {
  std::string name;
  std::size_t block_bytes;
  void (*dequantize)(const std::uint8_t*, std::int64_t, float*);
  double (*optimum_sq_error)(const float*);
  std::size_t half_offset;  // where the fp16 d sits: random bytes there get a finite scale
};

double q4_k_optimum(const float* x) { return kquant_ref::k4_optimum_sq_error(x, 15); }
double q5_k_optimum(const float* x) { return kquant_ref::k4_optimum_sq_error(x, 31); }

const KFormat kKFormats[] = {
    {"q4_k", 144, &kquant_ref::dequantize_q4_k, &q4_k_optimum, 0},
    {"q5_k", 176, &kquant_ref::dequantize_q5_k, &q5_k_optimum, 0},
    {"q6_k", 210, &kquant_ref::dequantize_q6_k, &kquant_ref::q6_k_optimum_sq_error, 208},
};

// Random block bytes with finite fp16 scales (|d| around 2^-10 .. 2^-3) so every value is finite.
std::vector<std::uint8_t> random_blocks(const KFormat& f, std::size_t blocks, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> q(blocks * f.block_bytes);
  for (auto& b : q) b = static_cast<std::uint8_t>(rng());
  for (std::size_t i = 0; i < blocks; ++i) {
    std::uint8_t* p = q.data() + i * f.block_bytes + f.half_offset;
    const int halves = f.name == "q6_k" ? 1 : 2;  // Q4_K, Q5_K: d and dmin
    for (int h = 0; h < halves; ++h) {
      p[2 * h] = static_cast<std::uint8_t>(rng());
      p[2 * h + 1] = static_cast<std::uint8_t>(0x14 + (rng() % 0x10) + (rng() % 2 ? 0x80 : 0));
    }
  }
  return q;
}

struct ErrorPair {
  double ours = 0, optimum = 0;  // RMSE over all values
};

ErrorPair measure(const KFormat& kf, const std::vector<float>& x) {
  auto f = format(kf.name);
  const auto k = static_cast<std::int64_t>(x.size());
  const auto y = dequantize(*f, quantize(*f, x, k, 1), k);
  double ours = 0, opt = 0;
  for (std::int64_t i = 0; i < k; ++i) ours += (static_cast<double>(y[i]) - x[i]) * (static_cast<double>(y[i]) - x[i]);
  for (std::int64_t b = 0; b < k / 256; ++b) opt += kf.optimum_sq_error(x.data() + b * 256);
  return {std::sqrt(ours / k), std::sqrt(opt / k)};
}

void report(const std::string& what, const ErrorPair& e) {
  std::printf("[ quantizer ] %s: rmse %.6g, optimum %.6g, ratio %.4f\n", what.c_str(), e.ours, e.optimum,
              e.ours / e.optimum);
  ::testing::Test::RecordProperty(what + " ratio", std::to_string(e.ours / e.optimum));
}

// Super-blocks of every F16 matrix in the zoo model, `per_tensor` evenly spaced ones from each.
std::vector<float> zoo_weights(std::size_t per_tensor) {
  auto file = graft::gguf::File::open(std::filesystem::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf");
  EXPECT_TRUE(file) << file.status().message();
  std::vector<float> out;
  if (!file) return out;
  for (const auto& t : (*file)->tensors()) {
    if (t.type != graft::type_id::f16 || t.ne[0] % 256 != 0 || t.ne[1] < 2) continue;
    const std::uint64_t blocks = t.elements() / 256;
    for (std::size_t s = 0; s < per_tensor; ++s) {
      const std::uint64_t b = blocks * s / per_tensor;
      for (int i = 0; i < 256; ++i) {
        std::uint16_t h;
        std::memcpy(&h, t.data + (b * 256 + static_cast<std::uint64_t>(i)) * 2, 2);
        out.push_back(quant_ref::fp16_to_fp32(h));
      }
    }
  }
  return out;
}

}  // namespace

TEST(KQuantQuantizers, DequantizeIsGgmlsBitForBit) {
  for (const KFormat& kf : kKFormats) {
    auto f = format(kf.name);
    ASSERT_NE(f, nullptr);
    const std::size_t blocks = 64;
    const auto q = random_blocks(kf, blocks, 61);
    const auto k = static_cast<std::int64_t>(blocks * 256);
    const auto got = dequantize(*f, q, k);
    std::vector<float> want(static_cast<std::size_t>(k));
    kf.dequantize(q.data(), k, want.data());
    for (std::int64_t i = 0; i < k; ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << kf.name << " " << i;
  }
}

TEST(KQuantQuantizers, QuantizedBlocksDequantizeToTheirOwnCodes) {
  // Quantizing what a block dequantizes to reproduces values at least as close (the quantizer
  // finds the stored grid again or a better one): a round trip never drifts.
  for (const KFormat& kf : kKFormats) {
    auto f = format(kf.name);
    const auto x = gaussian(256 * 16, 1.0f, 62);
    const auto y1 = dequantize(*f, quantize(*f, x, 256 * 16, 1), 256 * 16);
    const auto y2 = dequantize(*f, quantize(*f, y1, 256 * 16, 1), 256 * 16);
    double e = 0, s = 0;
    for (std::size_t i = 0; i < y1.size(); ++i) {
      e += (static_cast<double>(y2[i]) - y1[i]) * (static_cast<double>(y2[i]) - y1[i]);
      s += static_cast<double>(x[i]) * x[i];
    }
    EXPECT_LT(std::sqrt(e / s), 0.02) << kf.name;
  }
}

TEST(KQuantQuantizers, AllZeroAndConstantBlocksAreExact) {
  for (const KFormat& kf : kKFormats) {
    auto f = format(kf.name);
    std::vector<float> x(512, 0.0f);
    for (int i = 256; i < 512; ++i) x[static_cast<std::size_t>(i)] = kf.name == "q6_k" ? 0.0f : -0.5f;
    const auto y = dequantize(*f, quantize(*f, x, 512, 1), 512);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_NEAR(y[i], x[i], 1e-3) << kf.name << " " << i;
  }
}

TEST(KQuantQuantizers, GaussianErrorWithinTenPercentOfTheOptimum) {
  for (const KFormat& kf : kKFormats) {
    const auto e = measure(kf, gaussian(256 * 32, 1.0f, 63));
    report(kf.name + " gaussian", e);
    EXPECT_LE(e.ours, kOptimumSlack * e.optimum) << kf.name;
  }
}

TEST(KQuantQuantizers, ZooWeightsErrorWithinTenPercentOfTheOptimum) {
  const auto x = zoo_weights(2);
  ASSERT_GE(x.size(), 256u * 50);
  for (const KFormat& kf : kKFormats) {
    const auto e = measure(kf, x);
    report(kf.name + " zoo (" + std::to_string(x.size() / 256) + " super-blocks)", e);
    EXPECT_LE(e.ours, kOptimumSlack * e.optimum) << kf.name;
  }
}
