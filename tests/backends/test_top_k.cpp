// top_k: the k largest entries of each row in a total order (larger first, the lower index among
// equals, NaN last), the same for any thread count, k and SIMD level.
#include <algorithm>
#include <limits>
#include <numeric>

#include "cpu_fixture.hpp"

using namespace cpu_test;

namespace {

// ids [k, rows] (i32, packed).
TensorView ids_view(std::vector<std::int32_t>& ids, std::int64_t k, std::int64_t rows) {
  TensorView t = graft::i32_view(ids.data(), k);
  t.n_dims = 2;
  t.ne[1] = rows;
  t.nb[1] = t.nb[2] = t.nb[3] = sizeof(std::int32_t) * static_cast<std::size_t>(k);
  t.nb[2] *= static_cast<std::size_t>(rows);
  t.nb[3] = t.nb[2];
  return t;
}

class TopK : public OpTest {};
CPU_OP_TEST_SUITE(TopK);

// The reference: a stable sort of the indices by value, NaN after every number.
std::vector<std::int32_t> reference(const float* row, std::int64_t n, std::uint32_t k) {
  std::vector<std::int32_t> order(static_cast<std::size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [row](std::int32_t i, std::int32_t j) {
    const bool ni = std::isnan(row[i]), nj = std::isnan(row[j]);
    if (ni != nj) return nj;
    return !ni && row[i] > row[j];
  });
  order.resize(k);
  return order;
}

TEST_P(TopK, TheLargestEntriesOfEachRowInOrder) {
  const std::int64_t n = 151936, rows = 5;  // Qwen3's vocabulary
  auto x = random_floats(static_cast<std::size_t>(n * rows), -20.0f, 20.0f, 90);
  // Ties across the row (the lower index first), a NaN, infinities.
  x[17] = x[90000] = 25.0f;
  x[n + 5] = std::numeric_limits<float>::quiet_NaN();
  x[2 * n + 3] = std::numeric_limits<float>::infinity();
  x[3 * n + 7] = -std::numeric_limits<float>::infinity();
  for (std::uint32_t k : {1u, 2u, 40u}) {
    std::vector<std::int32_t> ids(std::size_t(k) * rows);
    std::vector<float> values(ids.size());
    ASSERT_TRUE(backend
                    ->top_k(view(x, n, rows), k, ids_view(ids, k, rows),
                            graft::f32_view(values.data(), k, rows))
                    .ok());
    for (std::int64_t r = 0; r < rows; ++r) {
      const auto want = reference(x.data() + r * n, n, k);
      for (std::uint32_t i = 0; i < k; ++i) {
        ASSERT_EQ(ids[r * k + i], want[i]) << "k " << k << " row " << r << " rank " << i;
        ASSERT_EQ(bits(values[r * k + i]), bits(x[r * n + want[i]]));
      }
    }
    if (k == 2) EXPECT_EQ(ids[0], 17) << "ties: the lower index first";
    if (k == 2) EXPECT_EQ(ids[1], 90000);
  }
}

TEST_P(TopK, NaNComesLastAndValuesAreOptional) {
  std::vector<float> x{std::numeric_limits<float>::quiet_NaN(), -1.0f, std::numeric_limits<float>::quiet_NaN(), -2.0f};
  std::vector<std::int32_t> ids(4);
  ASSERT_TRUE(backend->top_k(view(x, 4), 4, ids_view(ids, 4, 1), TensorView{}).ok());
  EXPECT_EQ(ids, (std::vector<std::int32_t>{1, 3, 0, 2}));
}

// k = 1 (greedy decoding's argmax) has its own loop: leading NaNs, all NaN, -inf after a NaN,
// signed zeros (equal: the lower index).
TEST_P(TopK, TheGreedyIdFollowsTheSameOrder) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::vector<std::vector<float>> rows = {{nan, nan, -3.0f, 5.0f, nan, 5.0f},
                                                {nan, nan, nan, nan, nan, nan},
                                                {nan, -inf, nan, -inf, nan, nan},
                                                {-0.0f, 0.0f, -1.0f, nan, -2.0f, 0.0f},
                                                {1.0f, inf, nan, inf, 2.0f, 3.0f}};
  for (const auto& row : rows) {
    std::vector<float> x = row;
    std::vector<std::int32_t> id(1);
    ASSERT_TRUE(backend->top_k(view(x, 6), 1, ids_view(id, 1, 1), TensorView{}).ok());
    EXPECT_EQ(id[0], reference(x.data(), 6, 1)[0]);
  }
}

// k > 1 keeps a buffer of the best so far and skips what cannot beat its k-th: rows where that
// cut is a NaN, an infinity or a value shared by many entries (sampling's k = 40 and the tie
// spans the cut), and k = n.
TEST_P(TopK, TheCutHoldsAcrossTiesNaNsAndInfinities) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const std::int64_t n = 5000;
  std::vector<std::vector<float>> rows;
  auto r = random_floats(n, -4.0f, 4.0f, 91);
  for (auto& x : r) x = std::round(x);  // nine values, hundreds of entries each
  rows.push_back(r);
  std::vector<float> few(n, nan);  // NaN everywhere but 10 numbers
  for (int i = 0; i < 10; ++i) few[static_cast<std::size_t>(i * 499 + 3)] = static_cast<float>(i % 3);
  rows.push_back(few);
  std::vector<float> infs = random_floats(n, -1.0f, 1.0f, 92);
  for (std::size_t i = 0; i < infs.size(); i += 97) infs[i] = i % 2 ? inf : -inf;
  for (std::size_t i = 5; i < infs.size(); i += 89) infs[i] = nan;
  rows.push_back(infs);
  for (const auto& row : rows)
    for (std::uint32_t k : {2u, 40u, 63u, 64u, 65u, 300u, static_cast<std::uint32_t>(n)}) {
      std::vector<float> x = row;
      std::vector<std::int32_t> ids(k);
      ASSERT_TRUE(backend->top_k(view(x, n), k, ids_view(ids, k, 1), TensorView{}).ok());
      ASSERT_EQ(ids, reference(x.data(), n, k)) << "k " << k;
    }
}

TEST_P(TopK, BadArgumentsAreRefused) {
  std::vector<float> x(8);
  std::vector<std::int32_t> ids(8);
  const std::string p = "cpu backend: top_k: ";
  EXPECT_EQ(backend->top_k(view(x, 8), 0, graft::i32_view(ids.data(), 1), TensorView{}).message(),
            p + "k = 0 must be between 1 and the row length 8");
  EXPECT_EQ(backend->top_k(view(x, 8), 9, graft::i32_view(ids.data(), 8), TensorView{}).message(),
            p + "k = 9 must be between 1 and the row length 8");
  EXPECT_EQ(backend->top_k(view(x, 4, 2), 2, graft::i32_view(ids.data(), 2), TensorView{}).message(),
            p + "ids has shape [2]; expected [2, 2] (k, rows of x)");
  TensorView float_ids = view(x, 1);
  EXPECT_EQ(backend->top_k(view(x, 8), 1, float_ids, TensorView{}).message(), p + "ids has type f32; expected i32");
}

}  // namespace
