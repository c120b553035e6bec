// Byte-identity checks for quantizers made faster without changing their output: the same data
// (Gaussian rows, every F16 weight of the zoo model, blocks built to hit the edge cases: ties
// between candidates from small integer and quarter-step values, zeros, constants, subnormals,
// huge values, infinities and NaN) through the plugin at every SIMD level this CPU has, against
// a copy of the first version kept in the test.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "ggml_reference.hpp"
#include "gguf/gguf_file.hpp"
#include "quant_test_util.hpp"
#include "test_util.hpp"

namespace kquant_identity {

// Every F16 weight of the zoo model whose rows are whole super-blocks of 256.
inline std::vector<float> zoo_all() {
  auto file = graft::gguf::File::open(GRAFT_ZOO_MODEL);
  EXPECT_TRUE(file) << file.status().message();
  std::vector<float> out;
  if (!file) return out;
  for (const auto& t : (*file)->tensors()) {
    if (t.type != 1 || t.ne[0] % 256 != 0) continue;
    for (std::uint64_t i = 0; i < t.elements(); ++i) {
      const std::uint8_t* p = t.data + 2 * i;
      out.push_back(quant_ref::fp16_to_fp32(static_cast<std::uint16_t>(p[0] | (p[1] << 8))));
    }
  }
  return out;
}

// Blocks chosen for edge cases, each kind many times with fresh random draws.
inline std::vector<float> edge_blocks() {
  std::mt19937 rng(2024);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> small_int(-3, 3), quarter(-8, 8), exp2(-30, 30), pick(0, 255);
  std::vector<float> out;
  auto block = [&](auto&& value) {
    for (int i = 0; i < 256; ++i) out.push_back(value(i));
  };
  for (int rep = 0; rep < 64; ++rep) {
    block([&](int) { return 0.0f; });
    block([&](int) { return 0.75f; });
    block([&](int) { return -2.0f; });
    block([&](int i) { return static_cast<float>(i % 4) - 1.0f; });         // exactly four levels
    block([&](int) { return static_cast<float>(small_int(rng)); });         // ties between candidates
    block([&](int) { return 0.25f * static_cast<float>(quarter(rng)); });   // more ties
    block([&](int) { return static_cast<float>(std::abs(small_int(rng))); });
    block([&](int) { return -static_cast<float>(std::abs(small_int(rng))); });
    const int one = pick(rng);
    block([&](int i) { return i == one ? normal(rng) : 0.0f; });             // a single non-zero
    block([&](int i) { return i == one ? 1000.0f : normal(rng); });          // one outlier
    block([&](int) { return normal(rng) * 1e-40f; });                        // subnormal
    block([&](int) { return normal(rng) * 1e-30f; });
    block([&](int) { return normal(rng) * 1e30f; });
    block([&](int) { return normal(rng) * 3e38f; });                         // overflowing sums
    block([&](int) { return normal(rng) * 65504.0f; });                      // fp16 range edge
    block([&](int) { return normal(rng) * 7e4f; });                          // super-scales overflow fp16
    block([&](int i) { return i == one ? INFINITY : normal(rng); });
    block([&](int i) { return i == one ? -INFINITY : normal(rng); });
    block([&](int i) { return i == one ? NAN : normal(rng); });
    block([&](int) { return std::abs(normal(rng)); });                       // all positive
    block([&](int) { return -std::abs(normal(rng)); });                      // all negative
    float scale = 1.0f;
    block([&](int i) {
      if (i % 16 == 0) scale = std::ldexp(1.0f, exp2(rng));                  // sub-blocks far apart
      return normal(rng) * scale;
    });
    block([&](int) { return pick(rng) < 230 ? 0.0f : normal(rng); });        // sparse
    block([&](int i) { return (i / 16) % 2 ? normal(rng) : 0.0f; });         // empty sub-blocks
    // Half-integer grids under a power-of-two extreme: trial steps and candidate scales that are
    // powers of two put codes exactly halfway between levels, where the rounding ties are decided.
    const float unit = std::ldexp(1.0f, exp2(rng) / 3);
    auto half_int = [&] { return static_cast<float>(small_int(rng)) + (pick(rng) % 2 ? 0.5f : -0.5f); };  // -3.5..3.5
    block([&](int i) { return unit * (i % 16 == 0 ? 4.0f : half_int()); });
    block([&](int i) { return unit * (i % 16 == 0 ? -4.0f : half_int()); });
    block([&](int i) { return unit * (i % 16 == 0 ? 3.0f : 0.5f * static_cast<float>(quarter(rng) % 7)); });
  }
  return out;
}

struct DataSet {
  std::string name;
  std::vector<float> x;
};

// Gaussian rows (4 MiB at sd 1, 1 MiB at a weight-like 0.02), every F16 weight of the zoo model,
// then the edge blocks.
inline std::vector<DataSet> data_sets() {
  std::vector<DataSet> out;
  out.push_back({"gaussian", quant_test::gaussian(256 * 4096, 1.0f, 5)});
  out.push_back({"gaussian sd 0.02", quant_test::gaussian(256 * 1024, 0.02f, 6)});
  out.push_back({"zoo", zoo_all()});
  out.push_back({"edge", edge_blocks()});
  return out;
}

inline std::vector<float> concatenated(const std::vector<DataSet>& sets) {
  std::vector<float> all;
  for (const auto& s : sets) all.insert(all.end(), s.x.begin(), s.x.end());
  return all;
}

// Names the first super-block of `block_bytes` bytes where `ours` differs from `ref` ("" when none).
inline std::string first_difference(const std::vector<DataSet>& sets, const std::vector<std::uint8_t>& ours,
                                    const std::vector<std::uint8_t>& ref, std::size_t block_bytes) {
  if (ours.size() != ref.size()) return "size " + std::to_string(ours.size()) + " != " + std::to_string(ref.size());
  std::size_t block = 0;
  for (const auto& s : sets)
    for (std::size_t b = 0; b < s.x.size() / 256; ++b, ++block)
      if (std::memcmp(ours.data() + block_bytes * block, ref.data() + block_bytes * block, block_bytes) != 0)
        return s.name + " block " + std::to_string(b);
  return "";
}

// The plugin's bytes for x (rows of 256).
inline std::vector<std::uint8_t> plugin_bytes(const std::string& format_name, const std::vector<float>& x) {
  auto f = quant_test::format(format_name);
  if (!f) return {};
  return quant_test::quantize(*f, x, 256, static_cast<std::int64_t>(x.size() / 256));
}

inline constexpr const char* kOutVar = "GRAFT_KQUANT_IDENTITY_OUT";

// The body of a DISABLED_ test the check below runs in a child process with $GRAFT_CPU_SIMD set
// (the quantizers pick their level once per process): writes the plugin's bytes for every data
// set to $GRAFT_KQUANT_IDENTITY_OUT.
inline void write_bytes_at_this_level(const std::string& format_name) {
  const char* path = std::getenv(kOutVar);
  ASSERT_NE(path, nullptr) << kOutVar << " is not set";
  const auto bytes = plugin_bytes(format_name, concatenated(data_sets()));
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(out.good()) << path;
}

// `reference` (the first version) against the plugin in this process and, through `child_test`
// (the DISABLED_ test calling write_bytes_at_this_level), at every SIMD level this CPU has.
inline void expect_same_bytes_at_every_level(const std::string& format_name, std::size_t block_bytes,
                                             const std::function<std::vector<std::uint8_t>(const std::vector<float>&)>& reference,
                                             const std::string& child_test) {
  const auto sets = data_sets();
  ASSERT_GT(sets[2].x.size(), 1000000u) << "zoo weights";
  const auto all = concatenated(sets);
  const auto ref = reference(all);
  EXPECT_EQ(first_difference(sets, plugin_bytes(format_name, all), ref, block_bytes), "") << "this process's level";
  TempDir dir;
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();  // not the shell's
  for (const auto& level : quant_test::available_levels()) {
    const auto out = (dir.path() / level).string();
    const auto r = run_command("GRAFT_CPU_SIMD=" + level + " " + kOutVar + "=" + out + " " + self +
                               " --gtest_also_run_disabled_tests --gtest_filter=" + child_test);
    ASSERT_EQ(r.exit_code, 0) << level << ": " << r.output;
    std::ifstream in(out, std::ios::binary);
    const std::vector<std::uint8_t> ours{std::istreambuf_iterator<char>(in), {}};
    EXPECT_EQ(first_difference(sets, ours, ref, block_bytes), "") << format_name << " at " << level;
  }
}


}  // namespace kquant_identity
