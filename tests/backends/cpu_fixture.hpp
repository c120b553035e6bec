// Shared helpers of the CPU backend tests: load the plugin once, create backends with a forced
// SIMD level and thread count, random data, double-precision reference helpers.
#pragma once

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <ostream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"

namespace cpu_test {

using graft::Backend;
using graft::Status;
using graft::TensorView;

inline constexpr const char* kLevels[] = {"scalar", "avx2", "avx512"};
inline constexpr int kThreadCounts[] = {1, 2, 3};

// Mirrors the plugin's rule (simd_level.cpp): avx2 needs avx2+fma+f16c, avx512 adds avx512f.
inline bool level_available(const std::string& level) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (level == "avx2") return avx2;
  if (level == "avx512") return avx2 && __builtin_cpu_supports("avx512f");
#endif
  return level == "scalar";
}

inline std::shared_ptr<graft::PluginLibrary> cpu_library() {
  static auto lib = graft::PluginLibrary::load(std::filesystem::path(GRAFT_PLUGIN_DIR) / "libgraft_backend_cpu.so");
  EXPECT_TRUE(lib) << lib.status().message();
  return lib ? *lib : nullptr;
}

// Creates a backend with GRAFT_CPU_SIMD = level ("" leaves the variable unset).
inline graft::Expected<std::shared_ptr<Backend>> try_make_cpu(std::int64_t threads, const std::string& level) {
  auto lib = cpu_library();
  if (!lib) return Status(graft::Errc::not_found, "cpu plugin did not load");
  if (level.empty())
    unsetenv("GRAFT_CPU_SIMD");
  else
    setenv("GRAFT_CPU_SIMD", level.c_str(), 1);
  graft::DefaultHostServices host;
  graft::Config cfg;
  cfg.set("threads", threads);
  auto b = lib->create<Backend>(host, cfg);
  unsetenv("GRAFT_CPU_SIMD");
  return b;
}

// An index array (positions, parents, rows) in host memory, as the ops take it; null: none.
inline graft::TensorView idx(const std::int32_t* p, std::size_t n) {
  return p ? graft::i32_view(const_cast<std::int32_t*>(p), static_cast<std::int64_t>(n)) : graft::TensorView{};
}
inline graft::TensorView idx(const std::vector<std::int32_t>& v) { return idx(v.data(), v.size()); }

inline std::shared_ptr<Backend> make_cpu(std::int64_t threads, const std::string& level = "") {
  auto b = try_make_cpu(threads, level);
  EXPECT_TRUE(b) << b.status().message();
  return b ? *b : nullptr;
}

// Parameter of the op tests: a SIMD level and a thread count.
struct Setup {
  std::string level;
  int threads;
};

inline void PrintTo(const Setup& s, std::ostream* os) { *os << s.level << ", " << s.threads << " threads"; }

inline std::vector<Setup> all_setups() {
  std::vector<Setup> v;
  for (const char* l : kLevels)
    for (int t : kThreadCounts) v.push_back({l, t});
  return v;
}

inline std::string setup_name(const ::testing::TestParamInfo<Setup>& info) {
  return info.param.level + "_t" + std::to_string(info.param.threads);
}

// Base of the parameterized op tests: skips a level this CPU lacks, otherwise makes the backend.
class OpTest : public ::testing::TestWithParam<Setup> {
 protected:
  void SetUp() override {
    if (!level_available(GetParam().level)) GTEST_SKIP() << "this CPU lacks " << GetParam().level;
    backend = make_cpu(GetParam().threads, GetParam().level);
    ASSERT_TRUE(backend);
    ASSERT_NE(backend->devices()[0].name.find("kernels " + GetParam().level), std::string::npos)
        << backend->devices()[0].name;
  }
  std::shared_ptr<Backend> backend;
};

#define CPU_OP_TEST_SUITE(suite) \
  INSTANTIATE_TEST_SUITE_P(cpu, suite, ::testing::ValuesIn(::cpu_test::all_setups()), ::cpu_test::setup_name)

inline std::vector<float> random_floats(std::size_t n, float lo, float hi, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

inline std::uint32_t bits(float f) { return std::bit_cast<std::uint32_t>(f); }

// Index of the first element whose bits differ, or -1.
inline std::int64_t first_bit_difference(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (bits(a[i]) != bits(b[i])) return static_cast<std::int64_t>(i);
  return -1;
}

inline TensorView view(std::vector<float>& v, std::int64_t ne0, std::int64_t ne1 = 1, std::int64_t ne2 = 1) {
  return graft::f32_view(v.data(), ne0, ne1, ne2);
}

}  // namespace cpu_test
