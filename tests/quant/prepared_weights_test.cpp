// FormatKernels::prepare: which formats and levels make a layout of their own, its size, and the
// exact errors when prepared weights do not belong to the weights or kernels they are passed with.
// (That prepared and file layouts give the same bits is checked by every kernel test: the shared
// matmul helper runs both.)
#include <algorithm>

#include "quant_test_util.hpp"

using namespace quant_test;

namespace {

bool has_vbmi() {
#ifdef __x86_64__
  return __builtin_cpu_supports("avx512vbmi");
#else
  return false;
#endif
}

// The avx512 / amx kernels of the packed formats read their layouts only with AVX512-VBMI and GFNI.
bool packed_avx512(const std::string& level) {
#ifdef __x86_64__
  return (level == "avx512" || level == "amx") && has_vbmi() && __builtin_cpu_supports("gfni");
#else
  (void)level;
  return false;
#endif
}

}  // namespace

TEST(PreparedWeights, PackedFormatsPackRowGroupsWhereTheirKernelsRun) {
  struct Case {
    const char* format;
    const char* layout;  // at avx512 / amx (with VBMI and GFNI)
    const char* other;   // at the other x86 SIMD levels, or null: the file's layout
    std::int64_t k, m;
    std::uint64_t bytes, other_bytes;  // whole groups of the file's bytes
  };
  const Case cases[] = {
      // 3 blocks per row; 3 groups of 16, the last with 5 rows; 2 groups of 32, the last with 5 rows
      {"q1_0", "q1_0_rows16", "q1_0_rows32", 384, 37, 3u * 16 * 3 * 18, 2u * 32 * 3 * 18},
      {"q4_k", "q4_k_rows4", nullptr, 512, 37, 10u * 4 * 2 * 144, 0},  // 2 blocks per row, 10 groups, the last with 1 row
      {"q2_k", "q2_k_rows4", nullptr, 768, 6, 2u * 4 * 3 * 84, 0},     // 3 blocks per row, 2 groups, the last with 2 rows
      {"q5_k", "q5_k_rows4", nullptr, 256, 9, 3u * 4 * 1 * 176, 0},    // 1 block per row, 3 groups, the last with 1 row
  };
  for (const Case& c : cases)
    for (const auto& level : available_levels()) {
      SCOPED_TRACE(std::string(c.format) + " " + level);
      auto f = format(c.format, level);
      const auto q = quantize(*f, gaussian(static_cast<std::size_t>(c.k * c.m), 0.05f, 5), c.k, c.m);
      std::unique_ptr<PreparedWeights> p;
      ASSERT_TRUE(f->kernels("cpu")->prepare(*cpu(2), weight_view(q.data(), traits(*f), c.k, c.m), p).ok());
      const char* want = packed_avx512(level) ? c.layout : level != "scalar" ? c.other : nullptr;
      ASSERT_EQ(p != nullptr, want != nullptr);
      if (!p) continue;
      EXPECT_STREQ(p->layout(), want);
      EXPECT_EQ(p->bytes(), packed_avx512(level) ? c.bytes : c.other_bytes);
    }
}

// Q8_0's layout is the AVX2 kernels' only: the avx512 kernels read the file's blocks.
TEST(PreparedWeights, Q8_0PacksRows4AtTheAvx2LevelOnly) {
  // 11 blocks per row (a chunk of 8 and one of 3); 5 groups of 4, the last with 1 row
  const std::int64_t k = 352, m = 17;
  for (const auto& level : available_levels()) {
    SCOPED_TRACE(level);
    auto f = format("q8_0", level);
    const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * m), 0.05f, 4), k, m);
    std::unique_ptr<PreparedWeights> p;
    ASSERT_TRUE(f->kernels("cpu")->prepare(*cpu(2), weight_view(q.data(), traits(*f), k, m), p).ok());
    ASSERT_EQ(p != nullptr, level == "avx2");
    if (!p) continue;
    EXPECT_STREQ(p->layout(), "q8_0_rows4");
    EXPECT_EQ(p->bytes(), 5u * 4 * 11 * 34);
  }
  // Rows longer than 2048 keep the file's layout at every level (q8_0_packed.hpp).
  const auto levels = available_levels();
  if (std::find(levels.begin(), levels.end(), "avx2") == levels.end()) return;
  for (const std::int64_t long_k : {std::int64_t{2048}, std::int64_t{2080}}) {
    auto f = format("q8_0", "avx2");
    const auto q = quantize(*f, gaussian(static_cast<std::size_t>(long_k * 4), 0.05f, 5), long_k, 4);
    std::unique_ptr<PreparedWeights> p;
    ASSERT_TRUE(f->kernels("cpu")->prepare(*cpu(2), weight_view(q.data(), traits(*f), long_k, 4), p).ok());
    EXPECT_EQ(p != nullptr, long_k <= 2048) << long_k;
  }
}

TEST(PreparedWeights, FormatsWithoutALayoutOfTheirOwnPrepareNothing) {
  for (const std::string name : {"q4_0", "q2_0", "q3_k", "q6_k"}) {
    SCOPED_TRACE(name);
    auto f = format(name);
    const std::int64_t k = 256, m = 8;
    const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * m), 0.05f, 6), k, m);
    std::unique_ptr<PreparedWeights> p;
    ASSERT_TRUE(f->kernels("cpu")->prepare(*cpu(1), weight_view(q.data(), traits(*f), k, m), p).ok());
    EXPECT_EQ(p, nullptr);
  }
}

TEST(PreparedWeights, MismatchedPreparedWeightsAreRefusedWithExactMessages) {
  const auto levels = available_levels();
  if (std::find(levels.begin(), levels.end(), "avx2") == levels.end()) GTEST_SKIP() << "no AVX2: Q1_0 prepares nothing on this CPU";
  // Q1_0 prepares rows16 at avx512 with VBMI, rows32 at avx2.
  const std::string level = packed_avx512("avx512") ? "avx512" : "avx2";
  SCOPED_TRACE(level);
  auto f = format("q1_0", level);
  auto& b = *cpu(2);
  FormatKernels& kern = *f->kernels("cpu");
  const std::int64_t k = 256, m = 32;
  const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * m), 0.05f, 7), k, m);
  const TensorView w = weight_view(q.data(), traits(*f), k, m);
  std::unique_ptr<PreparedWeights> p;
  ASSERT_TRUE(kern.prepare(b, w, p).ok());
  ASSERT_NE(p, nullptr);
  std::vector<float> x(static_cast<std::size_t>(k * 2), 0.5f), y(static_cast<std::size_t>(m * 2));
  EXPECT_TRUE(kern.matmul(b, w, p.get(), f32_view(x.data(), k, 2), f32_view(y.data(), m, 2)).ok());

  // Prepared from another matrix shape.
  const TensorView fewer = weight_view(q.data(), traits(*f), k, 16);
  EXPECT_EQ(kern.matmul(b, fewer, p.get(), f32_view(x.data(), k, 2), f32_view(y.data(), 16, 2)).message(),
            "q1_0 matmul: the prepared weights are [256, 32], the weight [256, 16]");
  // Prepared by the same format's kernels at another level: the other level's kernels refuse it.
  auto other = format("q1_0", level == "avx512" ? "avx2" : "scalar");
  EXPECT_EQ(other->kernels("cpu")->matmul(b, w, p.get(), f32_view(x.data(), k, 2), f32_view(y.data(), m, 2)).message(),
            "q1_0 matmul: the prepared weights were made for other kernels");
  auto amx = try_format("q1_0", "amx");
  if (amx) {
    std::unique_ptr<PreparedWeights> pa;
    ASSERT_TRUE((*amx)->kernels("cpu")->prepare(b, w, pa).ok());
    EXPECT_EQ(kern.matmul(b, w, pa.get(), f32_view(x.data(), k, 2), f32_view(y.data(), m, 2)).message(),
              "q1_0 matmul: the prepared weights were made for other kernels");
  }
  // Passed to another format's kernels.
  auto q2 = format("q2_0", level);
  const std::int64_t k2 = 256;
  const auto q2w = quantize(*q2, gaussian(static_cast<std::size_t>(k2 * m), 0.05f, 8), k2, m);
  const Status st = q2->kernels("cpu")->matmul(b, weight_view(q2w.data(), traits(*q2), k2, m), p.get(),
                                               f32_view(x.data(), k, 2), f32_view(y.data(), m, 2));
  EXPECT_FALSE(st.ok());
  EXPECT_TRUE(st.message() == "q2_0 matmul: the prepared weights were made by another plugin" ||
              st.message() == "q2_0 matmul: the prepared weights were made for other kernels")
      << st.message();
  // A weight view the format refuses is refused by prepare too.
  TensorView odd = w;
  odd.ne[0] = 200;
  std::unique_ptr<PreparedWeights> none;
  EXPECT_EQ(kern.prepare(b, odd, none).message(),
            "q1_0 prepare: weight row length 200 is not a multiple of the block size 128");
  EXPECT_EQ(none, nullptr);
}

// Weight rows further apart than a row (a view into a wider tensor): the packed copy is made from
// the rows wherever they are, and matmul on it gives the contiguous matrix's bits.
TEST(PreparedWeights, RowsWithAGapPackAndMultiplyLikeContiguousOnes) {
  for (const std::string name : {"q1_0", "q4_k", "q5_k", "q2_k", "q8_0"}) {
    SCOPED_TRACE(name);
    auto f = format(name);
    const std::int64_t k = 512, m = 21, n = 3;
    const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * m), 0.05f, 9), k, m);
    const std::size_t row = row_bytes(traits(*f), k), stride = row + 96;
    std::vector<std::uint8_t> wide(stride * static_cast<std::size_t>(m), 0xA5);
    for (std::int64_t r = 0; r < m; ++r)
      std::memcpy(wide.data() + static_cast<std::size_t>(r) * stride, q.data() + static_cast<std::size_t>(r) * row, row);
    TensorView w = weight_view(wide.data(), traits(*f), k, m);
    w.nb[1] = stride;
    const auto x = gaussian(static_cast<std::size_t>(k * n), 1.0f, 10);
    const auto want = matmul(*f, *cpu(2), q, k, m, x.data(), n);
    FormatKernels& kern = *f->kernels("cpu");
    std::vector<float> y(static_cast<std::size_t>(m * n));
    ASSERT_TRUE(kern.matmul(*cpu(2), w, f32_view(const_cast<float*>(x.data()), k, n), f32_view(y.data(), m, n)).ok());
    EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * 4), 0) << "file layout";
    std::unique_ptr<PreparedWeights> p;
    ASSERT_TRUE(kern.prepare(*cpu(2), w, p).ok());
    std::fill(y.begin(), y.end(), 0.0f);
    ASSERT_TRUE(kern.matmul(*cpu(2), w, p.get(), f32_view(const_cast<float*>(x.data()), k, n), f32_view(y.data(), m, n)).ok());
    EXPECT_EQ(std::memcmp(y.data(), want.data(), y.size() * 4), 0) << (p ? p->layout() : "no prepared copy");
  }
}
