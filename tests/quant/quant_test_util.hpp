// Shared by the quant tests: loading the format plugins and the CPU backend the way the host does,
// views over test buffers, and random data.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"

namespace quant_test {

using namespace graft;

inline const std::vector<std::string> kFormats = {"f32", "f16", "bf16", "q8_0", "q4_0"};
inline const std::vector<std::string> kLevels = {"scalar", "avx2", "avx512", "amx"};

inline std::shared_ptr<PluginLibrary> library(const std::string& file) {
  static std::map<std::string, std::shared_ptr<PluginLibrary>> cache;
  auto& lib = cache[file];
  if (!lib) {
    auto loaded = PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / file);
    EXPECT_TRUE(loaded) << loaded.status().message();
    if (loaded) lib = *loaded;
  }
  return lib;
}

inline DefaultHostServices& host() {
  static DefaultHostServices h;
  return h;
}

// A format plugin's WeightFormat with its kernels forced to `simd` ("" = the default choice).
inline Expected<std::shared_ptr<WeightFormat>> try_format(const std::string& name, const std::string& simd = "") {
  auto lib = library("libgraft_quant_" + name + ".so");
  if (!lib) return Status(Errc::not_found, "no plugin " + name);
  Config cfg;
  if (!simd.empty()) cfg.set("simd", simd);
  return lib->create<WeightFormat>(host(), cfg);
}

inline std::shared_ptr<WeightFormat> format(const std::string& name, const std::string& simd = "") {
  auto f = try_format(name, simd);
  EXPECT_TRUE(f) << f.status().message();
  return f ? *f : nullptr;
}

// The SIMD levels this machine runs (scalar always).
inline std::vector<std::string> available_levels() {
  std::vector<std::string> out;
  for (const auto& level : kLevels)
    if (try_format("q8_0", level)) out.push_back(level);
  return out;
}

inline std::shared_ptr<Backend> cpu(std::int64_t threads) {
  static std::map<std::int64_t, std::shared_ptr<Backend>> cache;
  auto& b = cache[threads];
  if (!b) {
    auto lib = library("libgraft_backend_cpu.so");
    Config cfg;
    cfg.set("threads", threads);
    auto created = lib->create<Backend>(host(), cfg);
    EXPECT_TRUE(created) << created.status().message();
    b = *created;
  }
  return b;
}

inline TypeTraits traits(WeightFormat& f) { return f.types()[0]; }

inline std::size_t row_bytes(const TypeTraits& t, std::int64_t k) {
  return static_cast<std::size_t>(k / t.block_elems * t.block_bytes);
}

// A [k, m] weight view over quantized bytes.
inline TensorView weight_view(const void* data, const TypeTraits& t, std::int64_t k, std::int64_t m) {
  TensorView v;
  v.data = const_cast<void*>(data);
  v.type = t.id;
  v.n_dims = 2;
  v.ne = {k, m, 1, 1};
  v.nb = {t.block_bytes, row_bytes(t, k), row_bytes(t, k) * static_cast<std::size_t>(m),
          row_bytes(t, k) * static_cast<std::size_t>(m)};
  return v;
}

inline std::vector<float> gaussian(std::size_t n, float sigma, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, sigma);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

// Quantizes m rows of k through the plugin.
inline std::vector<std::uint8_t> quantize(WeightFormat& f, const std::vector<float>& w, std::int64_t k, std::int64_t m) {
  std::vector<std::uint8_t> q(row_bytes(traits(f), k) * static_cast<std::size_t>(m));
  EXPECT_TRUE(f.quantize(traits(f).id, w.data(), q.data(), m, k, nullptr).ok());
  return q;
}

inline std::vector<float> dequantize(WeightFormat& f, const std::vector<std::uint8_t>& q, std::int64_t count) {
  std::vector<float> out(static_cast<std::size_t>(count));
  EXPECT_TRUE(f.dequantize(traits(f).id, q.data(), out.data(), count).ok());
  return out;
}

// y[n, m] = x[n, k] * w^T through the format's CPU kernels: on the file's layout, and where the
// kernels have a layout of their own (FormatKernels::prepare) on that too, which must give the same
// bits (so every kernel test covers both paths).
inline std::vector<float> matmul(WeightFormat& f, Backend& b, const std::vector<std::uint8_t>& q, std::int64_t k,
                                 std::int64_t m, const float* x, std::int64_t n) {
  std::vector<float> y(static_cast<std::size_t>(m * n), -12345.0f);
  FormatKernels* kern = f.kernels("cpu");
  EXPECT_NE(kern, nullptr);
  if (!kern) return y;
  const TensorView w = weight_view(q.data(), traits(f), k, m);
  const Status st = kern->matmul(b, w, f32_view(const_cast<float*>(x), k, n), f32_view(y.data(), m, n));
  EXPECT_TRUE(st.ok()) << st.message();
  std::unique_ptr<PreparedWeights> prepared;
  const Status pst = kern->prepare(b, w, prepared);
  EXPECT_TRUE(pst.ok()) << pst.message();
  if (prepared) {
    std::vector<float> yp(y.size(), -54321.0f);
    const Status mst = kern->matmul(b, w, prepared.get(), f32_view(const_cast<float*>(x), k, n), f32_view(yp.data(), m, n));
    EXPECT_TRUE(mst.ok()) << mst.message();
    std::size_t differ = 0;
    for (std::size_t i = 0; i < y.size(); ++i)
      if (std::memcmp(&y[i], &yp[i], sizeof(float)) != 0 && ++differ <= 3)
        ADD_FAILURE() << prepared->layout() << ": y[" << i / static_cast<std::size_t>(m) << "]["
                      << i % static_cast<std::size_t>(m) << "] = " << yp[i] << ", file layout " << y[i];
    EXPECT_EQ(differ, 0u) << "prepared (" << prepared->layout() << ") and file layouts differ, k=" << k << " m=" << m
                          << " n=" << n;
  }
  return y;
}

// get_rows of a 50-row table (Gaussian weights quantized with `seed`), repeated and unordered ids,
// 1 and 3 threads: every row equals dequantizing it.
inline void expect_get_rows_dequantizes(const std::string& name, std::int64_t k, std::uint32_t seed) {
  const std::int64_t rows = 50;
  const std::int32_t ids[] = {0, 49, 7, 7, 23, 1, 48};
  const std::size_t n = std::size(ids);
  auto f = format(name);
  ASSERT_NE(f, nullptr) << name;
  const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * rows), 1.0f, seed), k, rows);
  const auto all = dequantize(*f, q, k * rows);
  for (std::int64_t t : {1, 3}) {
    std::vector<float> y(n * static_cast<std::size_t>(k), -1.0f);
    const Status st = f->kernels("cpu")->get_rows(*cpu(t), weight_view(q.data(), traits(*f), k, rows), nullptr,
                                                  i32_view(const_cast<std::int32_t*>(ids), static_cast<std::int64_t>(n)),
                                                  f32_view(y.data(), k, static_cast<std::int64_t>(n)));
    ASSERT_TRUE(st.ok()) << st.message();
    for (std::size_t i = 0; i < n; ++i)
      EXPECT_EQ(std::memcmp(y.data() + i * static_cast<std::size_t>(k), all.data() + ids[i] * k,
                            static_cast<std::size_t>(k) * sizeof(float)),
                0)
          << name << " row " << i;
  }
}

}  // namespace quant_test
