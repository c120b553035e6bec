// Cross-check against ggml itself: the prebuilt libggml-base.so and libggml-cpu-<variant>.so that
// node-llama-cpp ships (tools/crosscheck), loaded at run time from $GRAFT_GGML_LIB_DIR (skipped
// when unset). For Q2_K, Q3_K, TQ2_0, TQ1_0: ggml's reference quantizer's blocks dequantize to the
// same floats in ggml and in our plugins; our TQ quantizers write ggml's bytes; and our matmul on
// those blocks gives exactly ggml's vec_dot on its own Q8_K activations (the CPU variant's SIMD
// path: haswell = AVX2). Also reports our K-quant quantizers' error next to ggml's reference ones
// (what llama-quantize runs without an importance matrix).
#include <dlfcn.h>

#include <bit>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "ggml_library.hpp"
#include "kquant_error.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

struct Case {
  std::string name;
  int ggml_type;
};

}  // namespace

TEST(GgmlLibrary, DequantizeQuantizeAndDotAgreeWithGgml) {
  Ggml g;
  const std::string why = load_ggml(g);
  if (!why.empty()) GTEST_SKIP() << why;
  std::printf("[ ggml     ] %s\n", g.cpu_file.c_str());
  constexpr int kQ8K = 15;
  const std::int64_t k = 4096, m = 9, n = 3;
  for (const Case& c : {Case{"q2_k", 10}, Case{"q3_k", 11}, Case{"tq2_0", 35}, Case{"tq1_0", 34}}) {
    SCOPED_TRACE(c.name);
    auto f = format(c.name);
    const GgmlTypeTraits* t = g.traits(c.ggml_type);
    const GgmlTypeTraitsCpu* tc = g.cpu_traits(c.ggml_type);
    ASSERT_EQ(tc->vec_dot_type, kQ8K);
    const auto w = gaussian(static_cast<std::size_t>(k * m), 0.05f, 111);
    const std::size_t rb = row_bytes(traits(*f), k);
    std::vector<std::uint8_t> q(rb * m);
    for (std::int64_t r = 0; r < m; ++r) t->from_float_ref(w.data() + r * k, q.data() + r * rb, k);
    if (c.name[0] == 't') {  // ternary: our quantizer is ggml's
      const auto ours = quantize(*f, w, k, m);
      EXPECT_EQ(std::memcmp(ours.data(), q.data(), q.size()), 0);
    }
    std::vector<float> yg(static_cast<std::size_t>(k * m));
    t->to_float(q.data(), yg.data(), k * m);
    const auto yo = dequantize(*f, q, k * m);
    EXPECT_EQ(std::memcmp(yg.data(), yo.data(), yo.size() * 4), 0);
    const auto x = gaussian(static_cast<std::size_t>(k * n), 1.0f, 112);
    expect_matmul_is_ggml_vec_dot(g, c.name, c.ggml_type, q, k, m, x, n);
  }
}

TEST(GgmlLibrary, OurKQuantErrorIsNoWorseThanGgmlsReferenceQuantizer) {
  Ggml g;
  const std::string why = load_ggml(g);
  if (!why.empty()) GTEST_SKIP() << why;
  const auto gauss = gaussian(256 * 256, 1.0f, 113);
  const auto zoo = kquant_error::zoo_weights(kquant_error::kZooTensors, 64);
  for (const Case& c : {Case{"q2_k", 10}, Case{"q3_k", 11}}) {
    auto f = format(c.name);
    const GgmlTypeTraits* t = g.traits(c.ggml_type);
    for (const auto* x : {&gauss, &zoo}) {
      const auto n = static_cast<std::int64_t>(x->size());
      std::vector<std::uint8_t> q(static_cast<std::size_t>(n / 256) * traits(*f).block_bytes);
      t->from_float_ref(x->data(), q.data(), n);
      std::vector<float> y(static_cast<std::size_t>(n));
      t->to_float(q.data(), y.data(), n);
      double ggml_sse = 0;
      for (std::size_t i = 0; i < y.size(); ++i) ggml_sse += (static_cast<double>(y[i]) - (*x)[i]) * (static_cast<double>(y[i]) - (*x)[i]);
      const double ours = std::sqrt(kquant_error::plugin_sse(*f, *x) / static_cast<double>(n));
      const double theirs = std::sqrt(ggml_sse / static_cast<double>(n));
      std::printf("[ error    ] %s %s (%lld blocks): ours rmse %.5g, ggml reference %.5g, ratio %.4f\n", c.name.c_str(),
                  x == &gauss ? "gaussian" : "zoo", static_cast<long long>(n / 256), ours, theirs, ours / theirs);
      EXPECT_LE(ours, theirs) << c.name;
    }
  }
}
