// The CUDA kernels' decoders (plugins/backends/cuda/kernels/weight_decode.hpp) run here as plain
// C++: each must give, 32 elements at a time, exactly the format plugin's dequantize of random
// quantized rows. The kernels decode with these functions, so a wrong scale or bit order is
// caught without a GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "cpu_fixture.hpp"
#include "weight_decode.hpp"

namespace {

using namespace graft::cuda::decode;

struct Case {
  const char* name;
  std::uint32_t type;
  void (*decode)(const std::uint8_t*, int, float*);
};

class CudaDecode : public ::testing::TestWithParam<Case> {};

TEST_P(CudaDecode, EqualsTheFormatsDequantizeBitForBit) {
  const Case& c = GetParam();
  static const graft::DefaultHostServices host;
  auto lib = graft::PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / ("libgraft_quant_" + std::string(c.name) + ".so"));
  ASSERT_TRUE(lib) << lib.status().message();
  auto f = (*lib)->create<graft::WeightFormat>(host, graft::Config{});
  ASSERT_TRUE(f) << f.status().message();
  const auto& traits = *std::find_if((*f)->types().begin(), (*f)->types().end(), [&](const auto& t) { return t.id == c.type; });
  const std::int64_t k = 1024, rows = 16;
  const std::size_t row_bytes = k / traits.block_elems * traits.block_bytes;
  // Spread magnitudes, so every scale and min bit is exercised.
  auto x = cpu_test::random_floats(k * rows, -1, 1, 5);
  for (std::int64_t i = 0; i < k * rows; ++i) x[i] *= 1.0f + float(i % 97);
  std::vector<std::uint8_t> q(row_bytes * rows);
  ASSERT_TRUE((*f)->quantize(c.type, x.data(), q.data(), rows, k, nullptr).ok());
  std::vector<float> want(k * rows), got(k * rows);
  ASSERT_TRUE((*f)->dequantize(c.type, q.data(), want.data(), k * rows).ok());
  for (std::int64_t r = 0; r < rows; ++r)
    for (int ch = 0; ch < k / 32; ++ch) c.decode(q.data() + r * row_bytes, ch, got.data() + r * k + 32 * ch);
  EXPECT_EQ(cpu_test::first_bit_difference(got, want), -1) << c.name;
}

INSTANTIATE_TEST_SUITE_P(types, CudaDecode,
                         ::testing::Values(Case{"f32", kF32, &F32::decode}, Case{"f16", kF16, &F16::decode},
                                           Case{"bf16", kBF16, &BF16::decode}, Case{"q8_0", kQ8_0, &Q8_0::decode},
                                           Case{"q4_k", kQ4_K, &Q4_K::decode}, Case{"q1_0", kQ1_0, &Q1_0::decode}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
