// Q4_K, Q5_K, Q6_K against ggml itself: the prebuilt libggml-base.so and libggml-cpu-<variant>.so of
// the node-llama-cpp package (llama.cpp release v0.4.0), loaded at run time from
// $GRAFT_GGML_LIB_DIR (the test skips when it is unset). Blocks from ggml's reference quantizers
// dequantize to the same floats in ggml and in our plugins; our matmul (every SIMD level) equals
// ggml's vec_dot on ggml's own Q8_K activations bit for bit; and our quantizers' error is reported
// next to ggml's reference quantizers' (what llama-quantize runs without an importance matrix).
#include <dlfcn.h>

#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ggml_library.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

struct Case {
  std::string name;
  int ggml_type;
};
const Case kCases[] = {{"q4_k", 12}, {"q5_k", 13}, {"q6_k", 14}};
constexpr int kQ8K = 15;

}  // namespace

TEST(KQuantGgml, DequantizeAndDotAreGgmlsBitForBit) {
  Ggml g;
  const std::string why = load_ggml(g);
  if (!why.empty()) GTEST_SKIP() << why;
  std::printf("[ ggml     ] %s\n", g.cpu_file.c_str());
  const std::int64_t k = 4096, m = 9, n = 3;
  for (const Case& c : kCases) {
    SCOPED_TRACE(c.name);
    auto f = format(c.name);
    ASSERT_NE(f, nullptr);
    const GgmlTypeTraits* t = g.traits(c.ggml_type);
    const GgmlTypeTraitsCpu* tc = g.cpu_traits(c.ggml_type);
    ASSERT_EQ(tc->vec_dot_type, kQ8K);
    ASSERT_EQ(t->type_size, traits(*f).block_bytes);
    const auto w = gaussian(static_cast<std::size_t>(k * m), 0.05f, 121);
    const std::size_t rb = row_bytes(traits(*f), k);
    // ggml's blocks for the first rows, ours for the last ones: each side must read both.
    std::vector<std::uint8_t> q(rb * m);
    for (std::int64_t r = 0; r < m; ++r) t->from_float_ref(w.data() + r * k, q.data() + r * rb, k);
    const auto ours = quantize(*f, w, k, m);
    std::memcpy(q.data() + 5 * rb, ours.data() + 5 * rb, 4 * rb);
    std::vector<float> yg(static_cast<std::size_t>(k * m));
    t->to_float(q.data(), yg.data(), k * m);
    const auto yo = dequantize(*f, q, k * m);
    EXPECT_EQ(std::memcmp(yg.data(), yo.data(), yo.size() * 4), 0);
    const auto x = gaussian(static_cast<std::size_t>(k * n), 1.0f, 122);
    expect_matmul_is_ggml_vec_dot(g, c.name, c.ggml_type, q, k, m, x, n);
  }
}

TEST(KQuantGgml, OurQuantizersErrorNextToGgmlsReference) {
  Ggml g;
  const std::string why = load_ggml(g);
  if (!why.empty()) GTEST_SKIP() << why;
  const auto x = gaussian(256 * 256, 1.0f, 123);
  const auto n = static_cast<std::int64_t>(x.size());
  for (const Case& c : kCases) {
    auto f = format(c.name);
    std::vector<std::uint8_t> q(static_cast<std::size_t>(n / 256) * traits(*f).block_bytes);
    g.traits(c.ggml_type)->from_float_ref(x.data(), q.data(), n);
    const auto theirs = dequantize(*f, q, n);
    const auto ours = dequantize(*f, quantize(*f, x, n, 1), n);
    double e_ours = 0, e_theirs = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      e_ours += (static_cast<double>(ours[i]) - x[i]) * (static_cast<double>(ours[i]) - x[i]);
      e_theirs += (static_cast<double>(theirs[i]) - x[i]) * (static_cast<double>(theirs[i]) - x[i]);
    }
    const double ro = std::sqrt(e_ours / n), rt = std::sqrt(e_theirs / n);
    std::printf("[ error    ] %s gaussian (256 blocks): ours rmse %.5g, ggml reference %.5g, ratio %.4f\n",
                c.name.c_str(), ro, rt, ro / rt);
    EXPECT_LE(ro, rt) << c.name;
  }
}
