// The formats whose kernels run on Q8_K activations (q8k_reference.hpp lists them): CPU matmul
// against two references at real shapes (k = 1024, 2048, 4096; m not a multiple of any tile;
// n = 1..9 and 64; 1-3 threads; every SIMD level this CPU has):
//  - exact: an independent statement of the documented per-output f32 operation order, bit for bit;
//  - approximate: a double-precision dot of the dequantized weights with the original x, within a
//    bound derived from the Q8_K rounding of x and the f32 accumulation.
// Plus determinism across batch position / threads / levels, get_rows and the error texts.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include "q8k_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

const std::vector<std::string> kQ8KFormats = {"q2_k", "q3_k", "tq2_0", "tq1_0"};

// Random blocks: every code, scale and min, with modest fp16 super-scales at each format's offset.
std::vector<std::uint8_t> random_blocks(const std::string& f, std::int64_t k, std::int64_t m, std::uint32_t seed) {
  const std::size_t bb = q8k_ref::block_bytes(f);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(k / 256 * m) * bb);
  std::mt19937 rng(seed);
  for (auto& v : q) v = static_cast<std::uint8_t>(rng());
  for (std::size_t b = 0; b < q.size(); b += bb) {
    if (f == "q2_k")
      for (std::size_t o : {80u, 82u}) {
        q[b + o] = static_cast<std::uint8_t>(rng());
        q[b + o + 1] = static_cast<std::uint8_t>(0x14 + rng() % 8);  // 2^-10 .. 2^-7
      }
    if (f == "tq2_0" || f == "tq1_0") {
      const std::size_t o = f == "tq2_0" ? 64 : 52;
      q[b + o] = static_cast<std::uint8_t>(rng());
      q[b + o + 1] = static_cast<std::uint8_t>(0x14 + rng() % 8 + (rng() % 2) * 0x80);
    }
    if (f == "q3_k") {
      q[b + 108] = static_cast<std::uint8_t>(rng());
      q[b + 109] = static_cast<std::uint8_t>(0x10 + rng() % 8 + (rng() % 2) * 0x80);  // +-2^-11 .. 2^-8
    }
  }
  return q;
}

// x rows: Gaussian, one block of 256 with halves that hit exact ties after scaling, one all zero.
std::vector<float> activations(std::int64_t k, std::int64_t n, std::uint32_t seed) {
  auto x = gaussian(static_cast<std::size_t>(k * n), 1.0f, seed);
  for (int j = 0; j < 256; ++j) x[static_cast<std::size_t>(j)] = j == 0 ? -127.0f : static_cast<float>(j % 9) - 4.5f;
  if (n > 2)
    for (int j = 0; j < 256; ++j) x[static_cast<std::size_t>(2 * k + j)] = 0.0f;
  return x;
}

void check(const std::string& f, const std::vector<std::uint8_t>& q, std::int64_t k, std::int64_t m,
           const std::vector<std::string>& levels, const std::vector<std::int64_t>& threads,
           const std::vector<std::int64_t>& ns, std::uint32_t seed) {
  SCOPED_TRACE(f + " k=" + std::to_string(k) + " m=" + std::to_string(m));
  const std::int64_t max_n = *std::max_element(ns.begin(), ns.end());
  const auto x = activations(k, max_n, seed);
  const std::size_t rb = static_cast<std::size_t>(k / 256) * q8k_ref::block_bytes(f);
  const auto exact = q8k_ref::matmul(f, q.data(), rb, k, m, x.data(), max_n);
  // Double reference and bound, [c][r].
  std::vector<double> ref(exact.size()), tol(exact.size());
  std::vector<float> wd(static_cast<std::size_t>(k));
  std::vector<double> mag(static_cast<std::size_t>(k));
  for (std::int64_t r = 0; r < m; ++r) {
    q8k_ref::decode_row(f, q.data() + static_cast<std::size_t>(r) * rb, k, wd.data(), mag.data());
    for (std::int64_t c = 0; c < max_n; ++c) {
      const float* xc = x.data() + c * k;
      double dot = 0, abs_dot = 0, act_err = 0;
      for (std::int64_t b = 0; b < k / 256; ++b) {
        double amax = 0;
        for (std::int64_t i = b * 256; i < (b + 1) * 256; ++i) amax = std::max(amax, std::fabs(static_cast<double>(xc[i])));
        for (std::int64_t i = b * 256; i < (b + 1) * 256; ++i) {
          const auto u = static_cast<std::size_t>(i);
          dot += static_cast<double>(wd[u]) * xc[i];
          abs_dot += mag[u] * (std::fabs(xc[i]) + amax / 127);
          act_err += std::fabs(wd[u]) * amax * (0.5 / 127);  // half a Q8_K step per element
        }
      }
      const auto o = static_cast<std::size_t>(c * m + r);
      ref[o] = dot;
      // Per block two f32 fmas and a scale product per lane, then the fold: relative 2^-24 each.
      tol[o] = act_err + static_cast<double>(3 * (k / 256) + 4) * 0x1p-23 * abs_dot + 1e-30;
    }
  }
  for (const auto& level : levels) {
    auto fmt = format(f, level);
    ASSERT_NE(fmt, nullptr);
    for (std::int64_t t : threads)
      for (std::int64_t n : ns) {
        SCOPED_TRACE(level + " threads=" + std::to_string(t) + " n=" + std::to_string(n));
        const auto y = matmul(*fmt, *cpu(t), q, k, m, x.data(), n);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
          if (std::bit_cast<std::uint32_t>(y[i]) != std::bit_cast<std::uint32_t>(exact[i]) && ++bad <= 3)
            ADD_FAILURE() << "y[" << i / m << "][" << i % m << "] = " << y[i] << ", exact reference " << exact[i];
          if (!(std::fabs(y[i] - ref[i]) <= tol[i]) && ++bad <= 3)
            ADD_FAILURE() << "y[" << i / m << "][" << i % m << "] = " << y[i] << ", double reference " << ref[i]
                          << " +- " << tol[i];
        }
        ASSERT_EQ(bad, 0u);
      }
  }
}

std::vector<std::uint8_t> quantized_gaussian(const std::string& f, std::int64_t k, std::int64_t m, std::uint32_t seed) {
  auto fmt = format(f);
  return quantize(*fmt, gaussian(static_cast<std::size_t>(k * m), 0.05f, seed), k, m);
}

const std::vector<std::int64_t> kSmallNs = {1, 2, 3, 4, 5, 6, 7, 8, 9, 64};

}  // namespace

TEST(Q8KFormats, MatmulOfQuantizedWeightsAtModelShapes) {
  for (const auto& f : kQ8KFormats) {
    check(f, quantized_gaussian(f, 1024, 37, 61), 1024, 37, available_levels(), {1, 2, 3}, kSmallNs, 62);
    check(f, quantized_gaussian(f, 2048, 101, 63), 2048, 101, available_levels(), {1, 3}, {1, 5, 9, 64}, 64);
    check(f, quantized_gaussian(f, 4096, 203, 65), 4096, 203, available_levels(), {2}, {1, 2, 7, 64}, 66);
  }
}

TEST(Q8KFormats, MatmulOfRandomBlocksCoversEveryCode) {
  for (const auto& f : kQ8KFormats) {
    check(f, random_blocks(f, 1024, 45, 67), 1024, 45, available_levels(), {1, 2}, kSmallNs, 68);
    check(f, random_blocks(f, 4096, 13, 69), 4096, 13, available_levels(), {3}, {1, 3, 64}, 70);
  }
}

TEST(Q8KFormats, AmxTileEdgesOfQ2K) {
  // Q2_K's amx level multiplies 16 x 16 tiles (for 16, 26-32, 39-48 and 52+ columns; the other
  // widths here take the avx512 tiles at this level): full and partial column tiles, partial row
  // tiles (37 and 21 rows; thread splits of 2 and 3), one and three blocks per row (an odd count:
  // the products pair across lanes), every code, scale and min.
  const auto levels = available_levels();
  if (std::find(levels.begin(), levels.end(), "amx") == levels.end()) GTEST_SKIP() << "no AMX on this CPU";
  check("q2_k", quantized_gaussian("q2_k", 1024, 37, 81), 1024, 37, {"amx"}, {1, 2, 3}, {8, 16, 17, 31, 32, 40}, 82);
  check("q2_k", random_blocks("q2_k", 768, 21, 83), 768, 21, {"amx"}, {1, 2}, {15, 16, 40}, 84);
  check("q2_k", random_blocks("q2_k", 256, 45, 85), 256, 45, {"amx"}, {3}, {16, 33, 64}, 86);
}

TEST(Q8KFormats, EveryColumnAloneAndUnevenBatchesGiveTheBatchBits) {
  constexpr std::int64_t k = 1024, m = 1001, n = 16;
  for (const auto& f : kQ8KFormats) {
    const auto q = quantized_gaussian(f, k, m, 71);
    const auto x = gaussian(static_cast<std::size_t>(k * n), 1.0f, 72);
    const auto want = matmul(*format(f, "scalar"), *cpu(1), q, k, m, x.data(), n);
    for (const auto& level : available_levels()) {
      auto fmt = format(f, level);
      for (std::int64_t t : {1, 2, 3}) {
        SCOPED_TRACE(f + " " + level + " threads=" + std::to_string(t));
        for (std::int64_t c = 0; c < n; ++c)
          ASSERT_EQ(std::memcmp(matmul(*fmt, *cpu(t), q, k, m, x.data() + c * k, 1).data(), want.data() + c * m, m * 4), 0)
              << "column " << c;
        for (std::int64_t w : {3, 5})
          for (std::int64_t c0 = 0; c0 + w <= n; c0 += w + 1)
            ASSERT_EQ(std::memcmp(matmul(*fmt, *cpu(t), q, k, m, x.data() + c0 * k, w).data(), want.data() + c0 * m,
                                  static_cast<std::size_t>(w * m) * 4), 0)
                << "columns " << c0 << "+" << w;
      }
    }
  }
}

TEST(Q8KFormats, GetRowsEqualsDequantizing) {
  const std::int64_t k = 512, rows = 40;
  const std::int32_t ids[] = {0, 39, 7, 7, 23};
  for (const auto& f : kQ8KFormats) {
    auto fmt = format(f);
    const auto q = quantized_gaussian(f, k, rows, 73);
    const auto all = dequantize(*fmt, q, k * rows);
    for (std::int64_t t : {1, 3}) {
      std::vector<float> y(std::size(ids) * k);
      ASSERT_TRUE(fmt->kernels("cpu")->get_rows(*cpu(t), weight_view(q.data(), traits(*fmt), k, rows), nullptr,
                                                i32_view(const_cast<std::int32_t*>(ids), std::size(ids)),
                                                f32_view(y.data(), k, static_cast<std::int64_t>(std::size(ids)))).ok());
      for (std::size_t i = 0; i < std::size(ids); ++i)
        EXPECT_EQ(std::memcmp(y.data() + i * k, all.data() + ids[i] * k, k * sizeof(float)), 0) << f << " row " << i;
    }
  }
}

TEST(Q8KFormats, DequantizeIsGgmlsFormula) {
  for (const auto& f : kQ8KFormats) {
    const std::int64_t k = 256 * 64;
    const auto q = random_blocks(f, k, 1, 74);
    const auto y = dequantize(*format(f), q, k);
    std::vector<float> want(static_cast<std::size_t>(k));
    std::vector<double> mag(static_cast<std::size_t>(k));
    q8k_ref::decode_row(f, q.data(), k, want.data(), mag.data());
    for (std::int64_t i = 0; i < k; ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(y[static_cast<std::size_t>(i)]), std::bit_cast<std::uint32_t>(want[static_cast<std::size_t>(i)]))
          << f << " element " << i;
  }
}

TEST(Q8KFormats, RowLengthMustBeAMultipleOf256AndSizesMustMatch) {
  for (const auto& f : kQ8KFormats) {
    auto fmt = format(f);
    std::vector<std::uint8_t> q(4096);
    std::vector<float> x(128), y(2);
    const Status st = fmt->kernels("cpu")->matmul(*cpu(1), weight_view(q.data(), traits(*fmt), 128, 2),
                                                  f32_view(x.data(), 128, 1), f32_view(y.data(), 2, 1));
    EXPECT_EQ(st.message(), f + " matmul: weight row length 128 is not a multiple of the block size 256");
    EXPECT_EQ(fmt->quantize(traits(*fmt).id, x.data(), q.data(), 1, 128, nullptr).message(),
              f + " quantize: row length 128 is not a multiple of the block size 256");
    const std::int64_t ne[] = {512, 3};
    const std::uint64_t want = 6 * q8k_ref::block_bytes(f);
    EXPECT_EQ(fmt->check_tensor(traits(*fmt).id, ne, 2, want - 1).message(),
              f + " tensor: " + std::to_string(want - 1) + " bytes, expected " + std::to_string(want) + " for its shape");
    EXPECT_TRUE(fmt->check_tensor(traits(*fmt).id, ne, 2, want).ok());
  }
}
