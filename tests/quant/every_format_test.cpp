// The promises every weight format makes, checked for every format plugin the host finds in the
// build's plugin folder (found at run time, so a new format is covered without editing a list):
//  - a row of y depends only on its weight row and activation row: not on the batch it is computed
//    in, on the thread count, or on the SIMD level (docs/formats.md, "Determinism");
//  - quantize -> dequantize stays within the error its bits allow;
//  - the kernels compute the product of the dequantized weights with the activations.
// The format-specific suites test each family's exact operation order and quantizer quality.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "plugin_host/plugin_registry.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

// The weight-format plugins in the build's plugin folder, as the host's registry finds them. A file
// that does not load still gets its tests (named from the file), which then fail saying why.
std::vector<std::string> loaded_formats() {
  PluginRegistry registry({GRAFT_PLUGIN_DIR});
  std::vector<std::string> names;
  for (const PluginScanEntry& entry : registry.scan(PluginKind::weight_format)) {
    if (entry.library) {
      names.push_back(entry.library->name());
    } else {
      const std::string stem = entry.file.stem().string();  // libgraft_quant_<name>
      names.push_back(stem.substr(std::min(stem.size(), std::string("libgraft_quant_").size())));
    }
  }
  return names;
}

// The SIMD levels this machine runs the format at (scalar always).
std::vector<std::string> levels_of(const std::string& name) {
  std::vector<std::string> out;
  for (const auto& level : kLevels)
    if (try_format(name, level)) out.push_back(level);
  return out;
}

bool same_bits(const float* a, const float* b, std::size_t count) { return std::memcmp(a, b, count * sizeof(float)) == 0; }

class EveryFormat : public testing::TestWithParam<std::string> {};

// The determinism fixture: m not a multiple of any row tile or packed row group (4, 16, 32).
constexpr std::int64_t kK = 1024, kM = 1001, kBatch = 40;
constexpr std::int64_t kThreadCounts[] = {1, 2, 3};
constexpr std::int64_t kLargestSmallBatch = 17;

TEST_P(EveryFormat, ARowDoesNotDependOnTheBatchTheThreadsOrTheLevel) {
  const std::string& name = GetParam();
  auto base = format(name);
  ASSERT_NE(base, nullptr);
  const auto q = quantize(*base, gaussian(static_cast<std::size_t>(kK * kM), 0.05f, 41), kK, kM);
  const auto x = gaussian(static_cast<std::size_t>(kK * kBatch), 1.0f, 42);
  auto scalar = format(name, "scalar");
  ASSERT_NE(scalar, nullptr);
  const auto want = matmul(*scalar, *cpu(2), q, kK, kM, x.data(), kBatch);
  for (const auto& level : levels_of(name)) {
    SCOPED_TRACE(name + " at " + level);
    auto f = format(name, level);
    ASSERT_NE(f, nullptr);
    for (std::int64_t t : kThreadCounts) {
      SCOPED_TRACE(std::to_string(t) + " threads");
      ASSERT_TRUE(same_bits(matmul(*f, *cpu(t), q, kK, kM, x.data(), kBatch).data(), want.data(), want.size()))
          << "the whole batch differs from the scalar kernel's";
      for (std::int64_t c = 0; c < kBatch; ++c)  // the decode path: one column
        ASSERT_TRUE(same_bits(matmul(*f, *cpu(t), q, kK, kM, x.data() + c * kK, 1).data(), want.data() + c * kM, kM))
            << "column " << c << " alone";
      for (std::int64_t n = 2; n <= kLargestSmallBatch; ++n) {  // at shifting offsets, odd ones included
        const std::int64_t c0 = (7 * n) % (kBatch - n + 1);
        ASSERT_TRUE(same_bits(matmul(*f, *cpu(t), q, kK, kM, x.data() + c0 * kK, n).data(), want.data() + c0 * kM,
                              static_cast<std::size_t>(n * kM)))
            << "columns " << c0 << ".." << c0 + n - 1;
      }
    }
  }
}

// How far a dequantized value may be from the value quantized, for a group of values whose largest
// magnitude is amax (a block; for a float format, which has blocks of one, 32 values):
//  - a block format of b bits per weight (rounded down: its scales take less than one bit) codes a
//    block in steps of about amax / 2^(b-1) (2^b codes across -amax..amax). Rounding to the nearest
//    code is half a step off; the edge of an asymmetric code range clips by up to a whole step
//    (Q4_0's -8..7 against +-amax), and the K-quants' quantized sub-block scales and mins, chosen for
//    the block's squared error rather than each value's, add up to a quarter step more (measured:
//    1.10 steps for Q3_K, 1.06 for Q5_K, at most 1.0 for the others). kScaleRounding covers the fp16
//    scale's own rounding. A value decoded one code off is 1.5 steps off at worst, and fails.
//  - a float format keeps at least 8 significant bits in 2 bytes (bf16; f16 keeps 11) and 24 in 4,
//    and rounds to nearest: at most amax * 2^-bits.
constexpr double kStepsOfError = 1.25;
constexpr double kScaleRounding = 1.0 / 256;
constexpr std::int64_t kFloatGroup = 32;

double error_bound(const TypeTraits& t, double amax) {
  if (t.block_elems == 1) return amax * std::ldexp(1.0, t.block_bytes >= 4 ? -24 : -8);
  const int bits = static_cast<int>(8 * t.block_bytes / t.block_elems);
  return kStepsOfError * (1 + kScaleRounding) * amax * std::ldexp(1.0, 1 - bits);
}

TEST_P(EveryFormat, DequantizedValuesAreWithinTheErrorTheirBitsAllow) {
  const std::string& name = GetParam();
  auto f = format(name);
  ASSERT_NE(f, nullptr);
  const TypeTraits t = traits(*f);
  const std::int64_t k = 4096, rows = 64;
  std::mt19937 rng(43);
  std::uniform_real_distribution<float> uniform(-1.0f, 1.0f);
  std::vector<float> w = gaussian(static_cast<std::size_t>(k * rows), 1.0f, 44);  // Gaussian rows, then uniform ones
  for (std::int64_t i = 0; i < k * rows; ++i) w.push_back(uniform(rng));
  const std::int64_t all_rows = 2 * rows;
  const auto back = dequantize(*f, quantize(*f, w, k, all_rows), k * all_rows);
  const std::int64_t group = t.block_elems == 1 ? kFloatGroup : t.block_elems;
  for (std::int64_t g = 0; g < k * all_rows; g += group) {
    double amax = 0, err = 0;
    for (std::int64_t i = g; i < g + group; ++i) {
      amax = std::max(amax, std::fabs(static_cast<double>(w[static_cast<std::size_t>(i)])));
      err = std::max(err, std::fabs(static_cast<double>(w[static_cast<std::size_t>(i)]) - back[static_cast<std::size_t>(i)]));
    }
    ASSERT_LE(err, error_bound(t, amax)) << name << " block at " << g << " (amax " << amax << ")";
  }
  // And the values carry information: each row closer to x than zero is.
  for (std::int64_t r = 0; r < all_rows; ++r) {
    double err2 = 0, norm2 = 0;
    for (std::int64_t i = r * k; i < (r + 1) * k; ++i) {
      const double v = w[static_cast<std::size_t>(i)];
      err2 += (v - back[static_cast<std::size_t>(i)]) * (v - back[static_cast<std::size_t>(i)]);
      norm2 += v * v;
    }
    ASSERT_LT(err2, norm2) << name << " row " << r;
  }
}

// Activations that every activation form of the kernels holds exactly (Q8_0 and Q8_K quants, f16
// and bf16 rounding): multiples of 2^-7 of magnitude at most 127 / 128, with 127 / 128 itself, of
// either sign, in every block of 32 (so each block's scale is exactly 2^-7). The kernels' results
// then differ from the exact product of the dequantized weights only by f32 rounding.
std::vector<float> exact_activations(std::int64_t k, std::int64_t n, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> code(-127, 127), at(0, 31), sign(0, 1);
  std::vector<float> x(static_cast<std::size_t>(k * n));
  for (std::size_t b = 0; b < x.size(); b += 32) {  // (a row of a float format may end inside a block)
    const std::size_t end = std::min(x.size(), b + 32);
    for (std::size_t i = b; i < end; ++i) x[i] = static_cast<float>(code(rng)) / 128;
    x[std::min(end - 1, b + static_cast<std::size_t>(at(rng)))] = sign(rng) ? 127.0f / 128 : -127.0f / 128;
  }
  return x;
}

// How far the kernels' f32 accumulation may take y from the exact sum, relative to the sum of
// |w x|: each addition rounds by at most 2^-24 of its partial sum, and the longest chains (the dense
// kernels' lanes, k / 8 = 512 additions at k = 4096) bound it by 2^-15 in the worst case; rounding
// errors of random sign stay far below that (2^-24 to 2^-26 measured). 2^-16 still fails for a
// single wrong weight of 4096 (about 2^-12 of the sum), let alone a wrong scale or block.
constexpr double kKernelRelativeError = 1.0 / 65536;

TEST_P(EveryFormat, KernelsComputeTheProductOfTheDequantizedWeights) {
  const std::string& name = GetParam();
  struct Shape {
    std::int64_t k, m;
  };
  const Shape shapes[] = {{256, 1024}, {1000, 333}, {4096, 64}};  // k rounded down to whole blocks
  for (const auto& level : levels_of(name)) {
    auto f = format(name, level);
    ASSERT_NE(f, nullptr);
    const TypeTraits t = traits(*f);
    for (const Shape& s : shapes) {
      const std::int64_t k = s.k / t.block_elems * t.block_elems, m = s.m;
      SCOPED_TRACE(name + " at " + level + ", k " + std::to_string(k) + " m " + std::to_string(m));
      const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * m), 0.05f, 45), k, m);
      const auto w = dequantize(*f, q, k * m);
      for (std::int64_t n : {1, 6}) {
        const auto x = exact_activations(k, n, 46);
        const auto y = matmul(*f, *cpu(2), q, k, m, x.data(), n);
        for (std::int64_t c = 0; c < n; ++c)
          for (std::int64_t r = 0; r < m; ++r) {
            double exact = 0, size = 0;
            for (std::int64_t i = 0; i < k; ++i) {
              const double p = static_cast<double>(w[static_cast<std::size_t>(r * k + i)]) * x[static_cast<std::size_t>(c * k + i)];
              exact += p;
              size += std::fabs(p);
            }
            const double err = std::fabs(y[static_cast<std::size_t>(c * m + r)] - exact);
            ASSERT_LE(err, kKernelRelativeError * size) << "y[" << c << "][" << r << "] = " << y[static_cast<std::size_t>(c * m + r)] << ", exact " << exact;
          }
      }
    }
  }
}

TEST_P(EveryFormat, GetRowsEqualsDequantizingTheRows) { expect_get_rows_dequantizes(GetParam(), 256, 51); }

INSTANTIATE_TEST_SUITE_P(Loaded, EveryFormat, testing::ValuesIn(loaded_formats()),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

// The folder does hold the formats (an empty scan would make the suite above pass vacuously).
TEST(EveryFormatScan, FindsTheFormatPlugins) {
  const auto names = loaded_formats();
  EXPECT_EQ(names.size(), static_cast<std::size_t>(GRAFT_QUANT_FORMAT_COUNT));
}

}  // namespace
