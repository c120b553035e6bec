// ggml itself for the cross-check tests: the prebuilt libggml-base.so and libggml-cpu-<variant>.so
// of the node-llama-cpp package (llama.cpp release v0.4.0, which node-llama-cpp 3.21.1 pins),
// loaded at run time from $GRAFT_GGML_LIB_DIR (tests skip when it is unset) so the default build
// needs none of it. The first CPU variant present is used, or $GRAFT_GGML_CPU_VARIANT.
#pragma once

#include <dlfcn.h>
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "quant_test_util.hpp"

namespace quant_test {

// Mirrors of ggml.h / ggml-cpu.h at that release; the package ships no headers.
using ToFloat = void (*)(const void*, float*, std::int64_t);
using FromFloat = void (*)(const float*, void*, std::int64_t);
using VecDot = void (*)(int, float*, std::size_t, const void*, std::size_t, const void*, std::size_t, int);
struct GgmlTypeTraits {
  const char* type_name;
  std::int64_t blck_size, blck_size_interleave;
  std::size_t type_size;
  bool is_quantized;
  ToFloat to_float;
  FromFloat from_float_ref;
};
struct GgmlTypeTraitsCpu {
  FromFloat from_float;
  VecDot vec_dot;
  int vec_dot_type;
  std::int64_t nrows;
};

struct Ggml {
  const GgmlTypeTraits* (*traits)(int) = nullptr;
  const GgmlTypeTraitsCpu* (*cpu_traits)(int) = nullptr;
  std::string cpu_file;
};

// Loads the two libraries, or says why not.
inline std::string load_ggml(Ggml& g) {
  const char* dir = std::getenv("GRAFT_GGML_LIB_DIR");
  if (!dir) return "GRAFT_GGML_LIB_DIR is not set (a node-llama-cpp bins/linux-x64 folder)";
  const std::filesystem::path base = std::filesystem::path(dir) / "libggml-base.so";
  void* hb = dlopen(base.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!hb) return std::string("cannot load ") + base.string() + ": " + dlerror();
  std::vector<std::string> variants = {"haswell", "sapphirerapids", "icelake", "skylakex", "x64"};
  if (const char* v = std::getenv("GRAFT_GGML_CPU_VARIANT")) variants = {v};
  for (const auto& variant : variants) {
    const auto p = std::filesystem::path(dir) / ("libggml-cpu-" + variant + ".so");
    if (!std::filesystem::exists(p)) continue;
    void* hc = dlopen(p.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!hc) return std::string("cannot load ") + p.string() + ": " + dlerror();
    g.traits = reinterpret_cast<const GgmlTypeTraits* (*)(int)>(dlsym(hb, "ggml_get_type_traits"));
    g.cpu_traits = reinterpret_cast<const GgmlTypeTraitsCpu* (*)(int)>(dlsym(hc, "ggml_get_type_traits_cpu"));
    auto init = reinterpret_cast<void (*)()>(dlsym(hc, "ggml_cpu_init"));
    if (!g.traits || !g.cpu_traits || !init) return "ggml symbols missing in " + p.string();
    init();
    g.cpu_file = p.filename().string();
    return "";
  }
  return std::string("no libggml-cpu-*.so in ") + dir;
}

// Our matmul (every SIMD level) of the m rows of q (k elements each, format `name`, ggml type
// ggml_type) with the n columns of x equals, bit for bit, ggml's vec_dot on its own Q8_K
// activations (292 bytes per 256).
inline void expect_matmul_is_ggml_vec_dot(const Ggml& g, const std::string& name, int ggml_type,
                                          const std::vector<std::uint8_t>& q, std::int64_t k, std::int64_t m,
                                          const std::vector<float>& x, std::int64_t n) {
  constexpr int kQ8K = 15;
  const GgmlTypeTraitsCpu* tc = g.cpu_traits(ggml_type);
  ASSERT_EQ(tc->vec_dot_type, kQ8K);
  const GgmlTypeTraitsCpu* q8 = g.cpu_traits(kQ8K);
  const std::size_t rb = q.size() / static_cast<std::size_t>(m);
  std::vector<std::uint8_t> xq(static_cast<std::size_t>(k / 256 * 292));
  std::vector<float> want(static_cast<std::size_t>(m * n));
  for (std::int64_t col = 0; col < n; ++col) {
    q8->from_float(x.data() + col * k, xq.data(), k);
    for (std::int64_t r = 0; r < m; ++r)
      tc->vec_dot(static_cast<int>(k), &want[static_cast<std::size_t>(col * m + r)], 0, q.data() + r * rb, 0, xq.data(),
                  0, 1);
  }
  for (const auto& level : available_levels()) {
    const auto y = matmul(*format(name, level), *cpu(2), q, k, m, x.data(), n);
    for (std::size_t i = 0; i < y.size(); ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(y[i]), std::bit_cast<std::uint32_t>(want[i]))
          << level << " y[" << i / static_cast<std::size_t>(m) << "][" << i % static_cast<std::size_t>(m)
          << "] = " << y[i] << ", ggml " << want[i];
  }
}

}  // namespace quant_test
