// Lossless speculative decoding verifies a draft by recomputing its rows in a batch, so a row's
// result must not depend on the batch it is computed in nor on the thread count: bitwise.
#include <functional>

#include "cpu_fixture.hpp"

using namespace cpu_test;
using graft::RopeParams;

namespace {

// Runs an op over `rows` rows of the inputs starting at row `first`; returns its output rows.
using RowsOp = std::function<std::vector<float>(Backend&, std::size_t first, std::size_t rows)>;

class Determinism : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    if (!level_available(GetParam())) GTEST_SKIP() << "this CPU lacks " << GetParam();
    for (int t : kThreadCounts) backends.push_back(make_cpu(t, GetParam()));
    for (auto& b : backends) ASSERT_TRUE(b);
  }

  // The whole batch on 1, 2 and 3 threads, and every row alone, give the same bits.
  void expect_row_independent(const RowsOp& op, std::size_t rows, std::size_t row_len, const char* what) {
    const std::vector<float> batch = op(*backends[0], 0, rows);
    ASSERT_EQ(batch.size(), rows * row_len) << what;
    for (std::size_t t = 1; t < backends.size(); ++t)
      EXPECT_EQ(first_bit_difference(op(*backends[t], 0, rows), batch), -1) << what << ", threads " << t + 1;
    for (std::size_t r = 0; r < rows; ++r) {
      const std::vector<float> alone = op(*backends[2], r, 1);
      const std::vector<float> in_batch(batch.begin() + r * row_len, batch.begin() + (r + 1) * row_len);
      EXPECT_EQ(first_bit_difference(alone, in_batch), -1) << what << ", row " << r << " alone";
    }
  }

  std::vector<std::shared_ptr<Backend>> backends;
};
INSTANTIATE_TEST_SUITE_P(cpu, Determinism, ::testing::Values("scalar", "avx2", "avx512"),
                         [](const auto& info) { return info.param; });

TEST_P(Determinism, RmsNormAndElementwise) {
  const std::size_t n = 4096, rows = 16;
  auto x = random_floats(n * rows, -4.0f, 4.0f, 71);
  auto u = random_floats(n * rows, -4.0f, 4.0f, 72);
  auto w = random_floats(n, 0.5f, 1.5f, 73);
  auto run = [&](auto&& call) {
    return [&, call](Backend& b, std::size_t first, std::size_t count) {
      std::vector<float> y(n * count);
      auto xv = graft::f32_view(x.data() + first * n, n, count);
      auto uv = graft::f32_view(u.data() + first * n, n, count);
      EXPECT_TRUE(call(b, xv, uv, view(y, n, count)).ok());
      return y;
    };
  };
  using TV = const graft::TensorView&;
  expect_row_independent(run([&](Backend& b, TV xv, TV, TV yv) { return b.rms_norm(xv, view(w, n), 1e-6f, yv); }),
                         rows, n, "rms_norm");
  expect_row_independent(run([&](Backend& b, TV xv, TV uv, TV yv) { return b.silu_mul(xv, uv, yv); }), rows, n,
                         "silu_mul");
  expect_row_independent(run([&](Backend& b, TV xv, TV uv, TV yv) { return b.add(xv, uv, yv); }), rows, n, "add");
  expect_row_independent(run([&](Backend& b, TV xv, TV, TV yv) { return b.add(xv, view(w, n), yv); }), rows, n,
                         "add broadcast");
}

TEST_P(Determinism, RopeTokens) {
  const std::size_t head_dim = 128, heads = 32, tokens = 16;
  auto x = random_floats(head_dim * heads * tokens, -2.0f, 2.0f, 75);
  std::vector<std::int32_t> pos(tokens);
  for (std::size_t t = 0; t < tokens; ++t) pos[t] = static_cast<std::int32_t>(100 + 37 * t);
  for (bool neox : {false, true}) {
    RopeParams p;
    p.n_rot = 96;
    p.neox = neox;
    p.freq_base = 1000000.0f;
    expect_row_independent(
        [&](Backend& b, std::size_t first, std::size_t count) {
          std::vector<float> y(head_dim * heads * count);
          EXPECT_TRUE(b.rope(graft::f32_view(x.data() + first * head_dim * heads, head_dim, heads, count),
                             idx(pos.data() + first, count), p, graft::f32_view(y.data(), head_dim, heads, count))
                          .ok());
          return y;
        },
        tokens, head_dim * heads, neox ? "rope neox" : "rope norm");
  }
}

// rope and add do no reductions and no fused arithmetic, and rms_norm sums in one fixed order:
// every SIMD level gives the scalar bits.
TEST(cpuDeterminism, ExactOpsGiveTheSameBitsOnEveryLevel) {
  const std::size_t head_dim = 128, heads = 32, tokens = 7, n = head_dim * heads * tokens;
  auto x = random_floats(n, -3.0f, 3.0f, 79);
  auto u = random_floats(n, -3.0f, 3.0f, 80);
  const std::vector<std::int32_t> pos = {0, 5, 17, 100, 1000, 4095, 30000};
  auto run = [&](const std::string& level) {
    auto b = make_cpu(2, level);
    std::vector<float> out;
    std::vector<float> y(n);
    for (bool neox : {false, true}) {
      RopeParams p;
      p.n_rot = 100;  // a tail for every vector width
      p.neox = neox;
      p.freq_base = 10000.0f;
      EXPECT_TRUE(b->rope(view(x, head_dim, heads, tokens), idx(pos), p, view(y, head_dim, heads, tokens)).ok());
      out.insert(out.end(), y.begin(), y.end());
    }
    EXPECT_TRUE(b->rms_norm(view(x, 1001, 27), view(u, 1001), 1e-6f, view(y, 1001, 27)).ok());
    out.insert(out.end(), y.begin(), y.end());
    EXPECT_TRUE(b->add(view(x, 1001, 27), view(u, 1001, 27), view(y, 1001, 27)).ok());
    out.insert(out.end(), y.begin(), y.end());
    return out;
  };
  const auto scalar = run("scalar");
  for (const char* level : {"avx2", "avx512"}) {
    if (!level_available(level)) continue;
    EXPECT_EQ(first_bit_difference(run(level), scalar), -1) << level;
  }
}

}  // namespace
