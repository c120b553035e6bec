// Q1_0 and Q2_0 CPU kernels against the documented computation (bonsai_reference.hpp, bit for
// bit) and a double-precision dot product (within a derived bound), at model shapes (k = 1024,
// 2048, 4096), row counts that are not a multiple of the row tile, rows that end in a partial
// 4-block pass, n = 1, 2, 3, 5, 16, 1-3 threads and every SIMD level this CPU has; determinism
// across batch splits; get_rows.
#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <thread>

#include "bonsai_reference.hpp"
#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

constexpr std::int64_t kMaxN = 40;  // two and a half 16-column AMX tiles

struct Shape {
  std::int64_t k, m;
};

int parts(const std::string& name) { return name == "q1_0" ? 1 : 2; }

// Gaussian rows, one block of exact .5 ties after scaling (ggml's x86 activation rounding is half
// to even), one all-zero block.
std::vector<float> activations(std::int64_t k, std::uint32_t seed) {
  auto x = gaussian(static_cast<std::size_t>(k * kMaxN), 1.0f, seed);
  if (k >= 128) {
    for (int j = 0; j < 32; ++j) x[32 + j] = j == 0 ? 127.0f : (j % 2 ? 2.5f : -0.5f) * (j % 3 ? 1.0f : -1.0f);
    for (int j = 0; j < 32; ++j) x[static_cast<std::size_t>(k + 64 + j)] = 0.0f;
  }
  return x;
}

std::vector<float> exact_reference(const std::string& name, const std::vector<std::uint8_t>& q,
                                   const std::vector<float>& x, Shape s, std::int64_t cols) {
  const std::size_t row_bytes = static_cast<std::size_t>(s.k / (name == "q1_0" ? 128 : 64) * 18);
  std::vector<bonsai_ref::Row> rows;
  for (std::int64_t r = 0; r < s.m; ++r)
    rows.push_back(bonsai_ref::decode_row(name == "q1_0", q.data() + static_cast<std::size_t>(r) * row_bytes, s.k));
  std::vector<float> y(static_cast<std::size_t>(s.m * kMaxN));
  for (std::int64_t c = 0; c < cols; ++c) {
    const auto xa = quant_ref::quantize_activation(x.data() + c * s.k, s.k);
    for (std::int64_t r = 0; r < s.m; ++r)
      y[static_cast<std::size_t>(c * s.m + r)] = bonsai_ref::canonical_dot(rows[static_cast<std::size_t>(r)], xa, parts(name));
  }
  return y;
}

// Double-precision dot products of the dequantized weights with x, and the allowed error: half an
// activation step plus the activation scale's fp16 rounding per element, and f32 accumulation over
// k / 32 / 16 terms per lane, the products' roundings and the fold.
void approximate_reference(const std::vector<float>& wd, const std::vector<float>& x, Shape s, std::int64_t cols,
                           std::vector<double>& ref, std::vector<double>& tol) {
  ref.assign(static_cast<std::size_t>(s.m * kMaxN), 0.0);
  tol.assign(ref.size(), 0.0);
  const double terms = static_cast<double>(s.k / 32 / 16 + 8);
  for (std::int64_t c = 0; c < cols; ++c) {
    const float* xc = x.data() + c * s.k;
    for (std::int64_t r = 0; r < s.m; ++r) {
      const float* wr = wd.data() + r * s.k;
      double dot = 0, abs_dot = 0, act_err = 0;
      for (std::int64_t b = 0; b < s.k / 32; ++b) {
        double amax = 0, wabs = 0;
        for (std::int64_t i = b * 32; i < b * 32 + 32; ++i) amax = std::max(amax, std::fabs(static_cast<double>(xc[i])));
        for (std::int64_t i = b * 32; i < b * 32 + 32; ++i) {
          dot += static_cast<double>(wr[i]) * xc[i];
          wabs += std::fabs(wr[i]);
          abs_dot += std::fabs(wr[i]) * (std::fabs(xc[i]) + amax / 127);
        }
        act_err += wabs * amax * (0.5 / 127 + 0x1p-11);
      }
      ref[static_cast<std::size_t>(c * s.m + r)] = dot;
      tol[static_cast<std::size_t>(c * s.m + r)] = act_err + terms * 0x1p-22 * abs_dot + 1e-30;
    }
  }
}

// Compares every level / thread count / n against both references; `q` defaults to quantizing
// Gaussian weights with the plugin.
void check(const std::string& name, Shape s, const std::vector<std::string>& levels,
           const std::vector<std::int64_t>& threads, const std::vector<std::int64_t>& ns, std::uint32_t seed,
           std::vector<std::uint8_t> q = {}) {
  SCOPED_TRACE(name + " k=" + std::to_string(s.k) + " m=" + std::to_string(s.m));
  auto base = format(name);
  ASSERT_NE(base, nullptr);
  if (q.empty()) q = quantize(*base, gaussian(static_cast<std::size_t>(s.k * s.m), 0.05f, seed), s.k, s.m);
  const auto wd = dequantize(*base, q, s.k * s.m);
  const auto x = activations(s.k, seed + 1);
  const std::int64_t cols = *std::max_element(ns.begin(), ns.end());
  const auto exact = exact_reference(name, q, x, s, cols);
  std::vector<double> ref, tol;
  approximate_reference(wd, x, s, cols, ref, tol);
  for (const auto& level : levels) {
    auto f = format(name, level);
    ASSERT_NE(f, nullptr);
    for (std::int64_t t : threads)
      for (std::int64_t n : ns) {
        SCOPED_TRACE(level + " threads=" + std::to_string(t) + " n=" + std::to_string(n));
        const auto y = matmul(*f, *cpu(t), q, s.k, s.m, x.data(), n);
        std::size_t bad = 0;
        for (std::size_t i = 0; i < y.size(); ++i) {
          if (std::bit_cast<std::uint32_t>(y[i]) != std::bit_cast<std::uint32_t>(exact[i]) && ++bad <= 3)
            ADD_FAILURE() << "y[" << i / s.m << "][" << i % s.m << "] = " << y[i] << ", exact reference " << exact[i];
          if (!(std::fabs(y[i] - ref[i]) <= tol[i]) && ++bad <= 3)
            ADD_FAILURE() << "y[" << i / s.m << "][" << i % s.m << "] = " << y[i] << ", double reference " << ref[i]
                          << " +- " << tol[i];
        }
        ASSERT_EQ(bad, 0u);
      }
  }
}

// Random bytes for every code and bit pattern (Q2_0's code 3 too), scales around 2^-7.
std::vector<std::uint8_t> random_blocks(Shape s, std::int64_t block_elems, std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::uint8_t> q(static_cast<std::size_t>(s.m * s.k / block_elems * 18));
  for (auto& b : q) b = static_cast<std::uint8_t>(rng());
  for (std::size_t b = 0; b < q.size(); b += 18) q[b + 1] = static_cast<std::uint8_t>(0x20 + (rng() & 0x8F));
  return q;
}

}  // namespace

TEST(BonsaiMatmul, ModelShapes) {
  for (const std::string name : {"q1_0", "q2_0"}) {
    check(name, {1024, 1001}, available_levels(), {1, 2, 3}, {1, 2, 3, 5, 16}, 71);
    check(name, {2048, 1030}, available_levels(), {2, 3}, {1, 5, 16}, 72);
  }
}

TEST(BonsaiMatmul, LargeSquareAndLongRowBatches) {
  // 4096-long rows: the AVX-512 batch path sweeps rows in blocks of ~256 KiB (455 Q1_0 rows, 226
  // Q2_0 rows), so these cover several blocks per thread and a partial one.
  for (const std::string name : {"q1_0", "q2_0"}) {
    check(name, {4096, 4096}, {available_levels().back()}, {2}, {1, 3}, 73);
    check(name, {4096, 1030}, available_levels(), {1, 2}, {5, 16}, 79);
  }
}

TEST(BonsaiMatmul, PartialPassesAndOddRowCounts) {
  // Q1_0 passes are 512 elements, Q2_0 256: these rows end in 1, 2 and 3 leftover blocks.
  for (const std::string name : {"q1_0", "q2_0"})
    for (std::int64_t k : {128, 384, 640, 1408}) check(name, {k, 37}, available_levels(), {1, 3}, {1, 2, 3, 5, 16}, 74);
  check("q2_0", {64, 5}, available_levels(), {1, 2}, {1, 3, 16}, 75);
  check("q2_0", {192, 9}, available_levels(), {2}, {1, 4, 7}, 76);
}

TEST(BonsaiMatmul, AmxTileEdges) {
  // The amx level's batch kernel works on 16 x 16 tiles (for 16, 26-32, 39-48 and 52+ columns; the
  // other widths here take the avx512 kernel at this level): full and partial column tiles, partial row
  // tiles (37 rows; thread splits of 2 and 3), and rows of fewer than 16 sub-blocks (k = 384),
  // whose unused lanes stay zero.
  const auto levels = available_levels();
  if (std::find(levels.begin(), levels.end(), "amx") == levels.end()) GTEST_SKIP() << "no AMX on this CPU";
  for (const std::string name : {"q1_0", "q2_0"}) {
    check(name, {1024, 37}, {"amx"}, {1, 2, 3}, {8, 9, 16, 17, 31, 32, 40}, 91);
    check(name, {384, 21}, {"amx"}, {1, 2}, {8, 15, 40}, 92);
    check(name, {2048, 100}, {"amx"}, {2}, {24, 40}, 93);
  }
}

TEST(BonsaiMatmul, ConsecutiveCallsOfOneShapeUseTheirOwnActivations) {
  // A thread keeps what it derives from a call's activations (Q1_0's decode tables, the AMX A
  // tiles) for the other row ranges the pool hands it in that call. The next call of the same shape
  // on the same threads, with other activations, must not find them still valid.
  const Shape s{1024, 300};
  for (const std::string name : {"q1_0", "q2_0"}) {
    auto base = format(name);
    ASSERT_NE(base, nullptr);
    const auto q = quantize(*base, gaussian(static_cast<std::size_t>(s.k * s.m), 0.05f, 94), s.k, s.m);
    const auto x1 = activations(s.k, 95), x2 = activations(s.k, 96);
    const auto want1 = exact_reference(name, q, x1, s, kMaxN), want2 = exact_reference(name, q, x2, s, kMaxN);
    for (const auto& level : available_levels()) {
      auto f = format(name, level);
      for (std::int64_t t : {1, 2})
        for (std::int64_t n : {1, 16, 40})
          for (int round = 0; round < 2; ++round) {
            SCOPED_TRACE(name + " " + level + " threads " + std::to_string(t) + " n " + std::to_string(n));
            const auto y1 = matmul(*f, *cpu(t), q, s.k, s.m, x1.data(), n);
            const auto y2 = matmul(*f, *cpu(t), q, s.k, s.m, x2.data(), n);
            ASSERT_EQ(std::memcmp(y1.data(), want1.data(), y1.size() * 4), 0) << "first activations";
            ASSERT_EQ(std::memcmp(y2.data(), want2.data(), y2.size() * 4), 0) << "second activations";
          }
    }
  }
}

TEST(BonsaiMatmul, EveryCodeAndBitPattern) {
  for (const std::string name : {"q1_0", "q2_0"}) {
    const std::int64_t elems = name == "q1_0" ? 128 : 64;
    check(name, {1024, 67}, available_levels(), {1, 2}, {1, 5, 16, 33}, 0, random_blocks({1024, 67}, elems, 77));
    check(name, {384, 9}, available_levels(), {1}, {1, 3}, 0, random_blocks({384, 9}, elems, 78));
  }
}

TEST(BonsaiDeterminism, IndependentOfBatchSplitThreadsAndLevel) {
  const std::int64_t k = 1024, m = 1001;
  for (const std::string name : {"q1_0", "q2_0"}) {
    auto scalar = format(name, "scalar");
    const auto q = quantize(*scalar, gaussian(static_cast<std::size_t>(k * m), 0.05f, 81), k, m);
    const auto x = gaussian(static_cast<std::size_t>(k * kMaxN), 1.0f, 82);
    const auto want = matmul(*scalar, *cpu(1), q, k, m, x.data(), kMaxN);
    for (const auto& level : available_levels()) {
      auto f = format(name, level);
      for (std::int64_t t : {1, 2, 3}) {
        SCOPED_TRACE(name + " " + level + " threads " + std::to_string(t));
        for (std::int64_t c = 0; c < kMaxN; ++c)
          ASSERT_EQ(std::memcmp(matmul(*f, *cpu(t), q, k, m, x.data() + c * k, 1).data(), want.data() + c * m, m * 4), 0)
              << "column " << c << " alone";
        for (std::int64_t n : {2, 3, 5, 6})
          for (std::int64_t c0 = 0; c0 + n <= kMaxN; c0 += n + 1)
            ASSERT_EQ(std::memcmp(matmul(*f, *cpu(t), q, k, m, x.data() + c0 * k, n).data(), want.data() + c0 * m,
                                  static_cast<std::size_t>(n * m) * 4),
                      0)
                << "columns " << c0 << ".." << c0 + n - 1;
      }
    }
  }
}

// Large batches of the Q1_0 rows32 layout run split on columns (PackedLayout::batches_by_column,
// from 16 columns a thread), smaller ones on rows: both give every column the bits of it alone.
TEST(BonsaiDeterminism, BatchesSplitOnColumnsOrRowsGiveTheSameBits) {
  const std::int64_t k = 2048, m = 331, n_max = 70;
  auto scalar = format("q1_0", "scalar");
  const auto q = quantize(*scalar, gaussian(static_cast<std::size_t>(k * m), 0.05f, 85), k, m);
  const auto x = gaussian(static_cast<std::size_t>(k * n_max), 1.0f, 86);
  std::vector<float> want;
  for (std::int64_t c = 0; c < n_max; ++c) {
    const auto y = matmul(*scalar, *cpu(1), q, k, m, x.data() + c * k, 1);
    want.insert(want.end(), y.begin(), y.end());
  }
  for (const auto& level : available_levels()) {
    auto f = format("q1_0", level);
    for (std::int64_t t : {1, 2, 3})
      for (std::int64_t n : {15, 16, 31, 32, 33, 47, 48, 70}) {
        SCOPED_TRACE(level + " threads " + std::to_string(t) + " n " + std::to_string(n));
        const auto y = matmul(*f, *cpu(t), q, k, m, x.data(), n);
        ASSERT_EQ(std::memcmp(y.data(), want.data(), static_cast<std::size_t>(n * m) * 4), 0);
      }
  }
}

TEST(BonsaiDeterminism, ConcurrentCallersAgree) {
  // The AVX-512 kernels keep per-thread activation buffers; two callers at once must not share them.
  const std::int64_t k = 1024, m = 203;
  for (const std::string name : {"q1_0", "q2_0"}) {
    auto f = format(name);
    const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * m), 0.05f, 83), k, m);
    const auto x = gaussian(static_cast<std::size_t>(k * kMaxN), 1.0f, 84);
    const auto want_a = matmul(*f, *cpu(1), q, k, m, x.data(), 3);
    const auto want_b = matmul(*f, *cpu(2), q, k, m, x.data() + 5 * k, 7);
    int bad_a = 0, bad_b = 0;
    std::thread ta([&] {
      for (int i = 0; i < 20; ++i) bad_a += matmul(*f, *cpu(1), q, k, m, x.data(), 3) != want_a;
    });
    std::thread tb([&] {
      for (int i = 0; i < 20; ++i) bad_b += matmul(*f, *cpu(2), q, k, m, x.data() + 5 * k, 7) != want_b;
    });
    ta.join();
    tb.join();
    EXPECT_EQ(bad_a + bad_b, 0) << name;
  }
}

TEST(BonsaiGetRows, EqualsDequantizingTheSelectedRows) {
  for (const std::string name : {"q1_0", "q2_0"}) expect_get_rows_dequantizes(name, 1024, 91);
}
