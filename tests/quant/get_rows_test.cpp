// get_rows: embedding lookup from a table of any format into f32 rows, equal to dequantizing them.
#include <bit>
#include <cstring>

#include "quant_test_util.hpp"

using namespace quant_test;

TEST(GetRows, LargeBatchSplitAcrossThreads) {
  const std::int64_t k = 1024, rows = 300, n = 200;
  auto f = format("q4_0");
  const auto q = quantize(*f, gaussian(static_cast<std::size_t>(k * rows), 1.0f, 52), k, rows);
  const auto all = dequantize(*f, q, k * rows);
  std::vector<std::int32_t> ids(n);
  for (std::int64_t i = 0; i < n; ++i) ids[static_cast<std::size_t>(i)] = static_cast<std::int32_t>((i * 37) % rows);
  std::vector<float> y(static_cast<std::size_t>(n * k));
  ASSERT_TRUE(f->kernels("cpu")->get_rows(*cpu(3), weight_view(q.data(), traits(*f), k, rows), nullptr,
                                          i32_view(ids.data(), n), f32_view(y.data(), k, n)).ok());
  for (std::int64_t i = 0; i < n; ++i)
    ASSERT_EQ(std::memcmp(y.data() + i * k, all.data() + ids[static_cast<std::size_t>(i)] * k, k * sizeof(float)), 0) << i;
}
