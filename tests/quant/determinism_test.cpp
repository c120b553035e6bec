// Lossless speculative decoding verifies a draft with one n > 1 matmul and must reproduce exactly
// what n = 1 decoding would have computed. So y[c][r] may depend only on weight row r and activation
// row c: not on n, on where c sits in the batch, on the thread count, or (by our stronger design) on
// the SIMD level.
#include <atomic>
#include <cstring>
#include <thread>

#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

// m not a multiple of any row tile; n above the kernels' small-batch widths (up to 16 columns)
constexpr std::int64_t kK = 1024, kM = 1001, kN = 24;

struct Fixture {
  std::vector<std::uint8_t> q;
  std::vector<float> x;
};

Fixture make(WeightFormat& f, std::uint32_t seed) {
  Fixture fx;
  fx.q = quantize(f, gaussian(static_cast<std::size_t>(kK * kM), 0.05f, seed), kK, kM);
  fx.x = gaussian(static_cast<std::size_t>(kK * kN), 1.0f, seed + 1);
  return fx;
}

// Columns [c0, c0 + n) computed as a batch of their own.
std::vector<float> slice(WeightFormat& f, Backend& b, const Fixture& fx, std::int64_t c0, std::int64_t n) {
  return matmul(f, b, fx.q, kK, kM, fx.x.data() + c0 * kK, n);
}

bool same_bits(const float* a, const float* b, std::size_t count) { return std::memcmp(a, b, count * sizeof(float)) == 0; }

}  // namespace

TEST(Determinism, IndependentOfBatchSizePositionAndThreads) {
  for (const auto& name : kFormats) {
    for (const auto& level : available_levels()) {
      SCOPED_TRACE(name + " " + level);
      auto f = format(name, level);
      ASSERT_NE(f, nullptr);
      const Fixture fx = make(*f, 41);
      const auto full = slice(*f, *cpu(1), fx, 0, kN);
      for (std::int64_t t : {1, 2, 3}) {
        // Every column alone (the decode path), then uneven batches at shifting offsets.
        for (std::int64_t c = 0; c < kN; ++c)
          ASSERT_TRUE(same_bits(slice(*f, *cpu(t), fx, c, 1).data(), full.data() + c * kM, kM))
              << "column " << c << " alone, threads " << t;
        // Every small-batch width (each its own tile shape), split widths and the large-batch tiles.
        for (std::int64_t n : {2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17}) {
          for (std::int64_t c0 = 0; c0 + n <= kN; c0 += n + 1)
            ASSERT_TRUE(same_bits(slice(*f, *cpu(t), fx, c0, n).data(), full.data() + c0 * kM,
                                  static_cast<std::size_t>(n * kM)))
                << "columns " << c0 << ".." << c0 + n - 1 << ", threads " << t;
        }
        ASSERT_TRUE(same_bits(slice(*f, *cpu(t), fx, 0, kN).data(), full.data(), full.size())) << "threads " << t;
      }
    }
  }
}

TEST(Determinism, EverySimdLevelGivesTheScalarBits) {
  for (const auto& name : kFormats) {
    auto scalar = format(name, "scalar");
    const Fixture fx = make(*scalar, 43);
    const auto want = slice(*scalar, *cpu(2), fx, 0, kN);
    for (const auto& level : available_levels()) {
      auto f = format(name, level);
      EXPECT_TRUE(same_bits(slice(*f, *cpu(2), fx, 0, kN).data(), want.data(), want.size())) << name << " " << level;
      EXPECT_TRUE(same_bits(slice(*f, *cpu(1), fx, 7, 1).data(), want.data() + 7 * kM, kM)) << name << " " << level;
    }
  }
}

TEST(Determinism, RepeatedCallsAreIdentical) {
  auto f = format("q4_0");
  const Fixture fx = make(*f, 45);
  const auto first = slice(*f, *cpu(3), fx, 0, kN);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(same_bits(slice(*f, *cpu(3), fx, 0, kN).data(), first.data(), first.size()));
}

TEST(Determinism, ConcurrentCallsOnOneFormatAgree) {
  // The format keeps one reusable scratch buffer; a second caller at the same time must get its
  // own, not share it.
  for (const std::string name : {"q8_0", "f16"}) {
    auto f = format(name);
    const Fixture fx = make(*f, 47);
    const auto want_a = slice(*f, *cpu(1), fx, 0, 3);
    const auto want_b = slice(*f, *cpu(2), fx, 5, 7);
    std::atomic<int> mismatches{0};
    auto worker = [&](Backend* b, std::int64_t c0, std::int64_t n, const std::vector<float>* want) {
      for (int i = 0; i < 20; ++i)
        if (!same_bits(slice(*f, *b, fx, c0, n).data(), want->data(), want->size())) ++mismatches;
    };
    std::thread ta(worker, cpu(1).get(), 0, 3, &want_a);
    std::thread tb(worker, cpu(2).get(), 5, 7, &want_b);
    ta.join();
    tb.join();
    EXPECT_EQ(mismatches.load(), 0) << name;
  }
}
