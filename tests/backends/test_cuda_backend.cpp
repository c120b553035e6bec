// The CUDA backend. Without a GPU (this machine, CI): the plugin loads, says why it cannot run, and
// refuses work with that reason. With one: its ops against the CPU backend's on the same inputs,
// with the tolerances of docs/backends.md ("What the CUDA backend must match").
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "cuda_fixture.hpp"
#include "top_k_key.hpp"

using namespace cuda_test;

namespace {

TEST(CudaBackend, LoadsAndSaysWhetherItHasADevice) {
  auto cuda = make_cuda();
  ASSERT_TRUE(cuda);
  EXPECT_EQ(cuda->name(), "cuda");
  const graft::Status st = cuda->status();
  if (st.ok()) {
    ASSERT_FALSE(cuda->devices().empty());
    EXPECT_GT(cuda->devices()[0].compute_major, 0);
    GTEST_SKIP() << "a CUDA device is present: " << cuda->devices()[0].name;
  }
  // No device: one line saying so; no device listed; every call refused with the reason.
  EXPECT_EQ(st.message().rfind("no CUDA device", 0), 0u) << st.message();
  EXPECT_TRUE(cuda->devices().empty());
  EXPECT_FALSE(cuda->graphs_supported());
  auto buf = cuda->allocate(1024, graft::MemoryKind::device);
  ASSERT_FALSE(buf);
  EXPECT_EQ(buf.status().message(), "cuda backend: allocate: " + st.message());
  std::vector<float> x(8), w(8);
  EXPECT_EQ(cuda->rms_norm(view(x, 8), view(w, 8), 1e-6f, view(x, 8)).message(), "cuda backend: rms_norm: " + st.message());
}

// The radix select's key orders as top_k does: a larger key first, equal keys exactly for equal
// entries (-0 and +0, any two NaNs), NaN below every number.
TEST(CudaBackend, TheTopKKeyOrdersAsTopK) {
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  const float denorm = std::numeric_limits<float>::denorm_min(), big = std::numeric_limits<float>::max();
  const std::vector<float> v{nan,  -nan,  -inf,   -big, -1.5f, -1.0f, -denorm, -0.0f,
                             0.0f, denorm, 1e-30f, 1.0f, 2.0f,  big,   inf};
  for (float a : v)
    for (float b : v) {
      const std::uint32_t ka = graft::cuda::top_k_key(a), kb = graft::cuda::top_k_key(b);
      const bool na = std::isnan(a), nb = std::isnan(b);
      const bool a_first = na != nb ? nb : !na && a > b;  // top_k's order between different values
      const bool equal = na == nb && (na || a == b);
      EXPECT_EQ(ka == kb, equal) << a << " " << b;
      if (!equal) {
        EXPECT_EQ(ka > kb, a_first) << a << " " << b;
      }
    }
  EXPECT_EQ(graft::cuda::top_k_key(nan), 0u);
}

// ---- with a GPU: the ops against the CPU's ----
// rms_norm sums in another order than the CPU (a tree of 256 partial double sums): 1 ulp of the
// mean at most, i.e. a few ulp of the output.
constexpr double kRmsNormRelTol = 4e-7;
// silu and sigmoid: CUDA's expf against the CPU's exp, within 2 ulp each.
constexpr double kGatedRelTol = 1e-6;
// rope: CUDA's sinf/cosf are not glibc's (about 1 ulp of the angle).
constexpr double kRopeAbsTol = 2e-6;

TEST_F(OnGpu, RmsNormAddAndGatesMatchTheCpu) {
  const std::int64_t n = 4096, rows = 7;
  const auto x = random_floats(n * rows, -3, 3, 1), w = random_floats(n, -1, 1, 2), u = random_floats(n * rows, -3, 3, 3);
  std::vector<float> want(x.size()), a = x, b = u;
  ASSERT_TRUE(cpu->rms_norm(view(a, n, rows), view(const_cast<std::vector<float>&>(w), n), 1e-6f, view(want, n, rows)).ok());
  float *dx = upload(x), *dw = upload(w), *dy = upload(std::vector<float>(x.size()));
  ASSERT_TRUE(cuda->rms_norm(dev(dx, n, rows), dev(dw, n), 1e-6f, dev(dy, n, rows)).ok());
  EXPECT_LE(max_rel(download(dy, x.size()), want), kRmsNormRelTol);

  ASSERT_TRUE(cpu->add(view(a, n, rows), view(b, n, rows), view(want, n, rows)).ok());
  float* du = upload(u);
  ASSERT_TRUE(cuda->add(dev(dx, n, rows), dev(du, n, rows), dev(dy, n, rows)).ok());
  EXPECT_EQ(first_bit_difference(download(dy, x.size()), want), -1);  // exact

  ASSERT_TRUE(cpu->silu_mul(view(a, n, rows), view(b, n, rows), view(want, n, rows)).ok());
  ASSERT_TRUE(cuda->silu_mul(dev(dx, n, rows), dev(du, n, rows), dev(dy, n, rows)).ok());
  EXPECT_LE(max_rel(download(dy, x.size()), want), kGatedRelTol);
}

TEST_F(OnGpu, RopeMatchesTheCpu) {
  const std::int64_t d = 128, heads = 32, tokens = 7;
  const auto x = random_floats(d * heads * tokens, -2, 2, 4);
  const std::vector<std::int32_t> pos{0, 1, 2, 17, 100, 1000, 4095};
  for (bool neox : {false, true}) {
    graft::RopeParams p;
    p.n_rot = 128;
    p.neox = neox;
    p.freq_base = 1000000.0f;
    std::vector<float> a = x, want(x.size());
    ASSERT_TRUE(cpu->rope(view(a, d, heads, tokens), idx(pos), p, view(want, d, heads, tokens)).ok());
    float *dx = upload(x), *dy = upload(std::vector<float>(x.size()));
    const TensorView dpos = graft::i32_view(upload(pos), tokens, graft::MemoryKind::device);
    ASSERT_TRUE(cuda->rope(dev(dx, d, heads, tokens), dpos, p, dev(dy, d, heads, tokens)).ok());
    const auto got = download(dy, x.size());
    double m = 0;
    for (std::size_t i = 0; i < got.size(); ++i) m = std::max(m, std::abs(double(got[i]) - want[i]));
    EXPECT_LE(m, kRopeAbsTol) << (neox ? "neox" : "norm");
  }
}

// Rows that test both top_k kernels (k passes up to k = 4, the radix select above): random, ties
// across every cut (coarse values), mostly NaN, infinities and signed zeros, all NaN.
TEST_F(OnGpu, TopKGivesTheCpuIdsAndValues) {
  const std::int64_t n = 151936, rows = 6;
  const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
  auto x = random_floats(n * rows, -20, 20, 5);
  x[11] = x[n - 1] = 30.0f;  // a tie: the lower index first
  for (std::int64_t i = n; i < 2 * n; ++i) x[i] = std::round(x[i] / 8);  // five values, ~30K entries each
  for (std::int64_t i = 2 * n; i < 3 * n; ++i) x[i] = i % 1000 == 7 ? x[i] : nan;  // 152 numbers
  for (std::int64_t i = 3 * n; i < 4 * n; i += 101) x[i] = (i / 101) % 2 ? inf : -inf;
  for (std::int64_t i = 3 * n + 5; i < 4 * n; i += 103) x[i] = (i / 103) % 2 ? 0.0f : -0.0f;
  for (std::int64_t i = 4 * n; i < 5 * n; ++i) x[i] = nan;
  for (std::int64_t i = 5 * n; i < 6 * n; ++i) x[i] = (i % 3) ? -inf : nan;
  float* dx = upload(x);
  for (std::uint32_t k : {1u, 2u, 5u, 40u, 256u, 1000u}) {
    std::vector<std::int32_t> want(k * rows);
    std::vector<float> want_v(want.size());
    TensorView ids = graft::i32_view(want.data(), k);
    ids.n_dims = 2, ids.ne[1] = rows, ids.nb[1] = 4 * k, ids.nb[2] = ids.nb[3] = 4 * k * rows;
    ASSERT_TRUE(cpu->top_k(view(x, n, rows), k, ids, view(want_v, k, rows)).ok());
    std::int32_t* dids = upload(std::vector<std::int32_t>(k * rows));
    float* dvals = upload(std::vector<float>(k * rows));
    TensorView gids = ids;
    gids.data = dids;
    gids.memory = graft::MemoryKind::device;
    ASSERT_TRUE(cuda->top_k(dev(dx, n, rows), k, gids, dev(dvals, k, rows)).ok());
    const auto got = download(dids, k * rows);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::uint32_t i = 0; i < k; ++i)
        ASSERT_EQ(got[r * k + i], want[r * k + i]) << "k " << k << " row " << r << " rank " << i;
    EXPECT_EQ(first_bit_difference(download(dvals, k * rows), want_v), -1) << "k " << k;
  }
}

// The softmax of a vocabulary-sized row: the CPU's within kSoftmaxRelTol of each probability (the
// GPU's expf and its sum's tree differ from the CPU's std::exp and index order by a few ulp).
TEST_F(OnGpu, SoftmaxGivesTheCpuProbabilities) {
  constexpr double kSoftmaxRelTol = 1e-5;
  const std::int64_t n = 151936, rows = 3;
  auto x = random_floats(n * rows, -20, 20, 8);
  x[n + 7] = std::numeric_limits<float>::quiet_NaN();  // ignored by the maximum, NaN itself
  std::vector<float> want(x.size());
  ASSERT_TRUE(cpu->softmax(view(x, n, rows), view(want, n, rows)).ok());
  float* dx = upload(x);
  ASSERT_TRUE(cuda->softmax(dev(dx, n, rows), dev(dx, n, rows)).ok());  // in place
  const auto got = download(dx, x.size());
  double worst = 0;
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << i;
      continue;
    }
    worst = std::max(worst, std::abs(double(got[i]) - want[i]) / std::max(double(want[i]), 1e-30));
  }
  EXPECT_LE(worst, kSoftmaxRelTol);
}

TEST_F(OnGpu, AGraphReplaysItsCapture) {
  ASSERT_TRUE(cuda->graphs_supported());
  const std::int64_t n = 1024;
  const auto a = random_floats(n, -1, 1, 6), b = random_floats(n, -1, 1, 7);
  float *da = upload(a), *db = upload(b), *dy = upload(std::vector<float>(n));
  std::unique_ptr<graft::Graph> graph;
  ASSERT_TRUE(cuda->begin_capture().ok());
  ASSERT_TRUE(cuda->add(dev(da, n), dev(db, n), dev(dy, n)).ok());
  ASSERT_TRUE(cuda->end_capture(graph).ok());
  ASSERT_TRUE(graph);
  EXPECT_EQ(download(dy, n), std::vector<float>(n, 0.0f)) << "captured, not run";
  ASSERT_TRUE(graph->launch().ok());
  const auto y = download(dy, n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(y[i], a[i] + b[i]);
  // Captured again with other pointers: updated in place, not made anew.
  ASSERT_TRUE(cuda->begin_capture().ok());
  ASSERT_TRUE(cuda->add(dev(db, n), dev(db, n), dev(dy, n)).ok());
  ASSERT_TRUE(cuda->end_capture(graph).ok());
  ASSERT_TRUE(graph->launch().ok());
  EXPECT_EQ(graph->instantiations(), 1u);
  const auto y2 = download(dy, n);
  for (std::int64_t i = 0; i < n; ++i) ASSERT_EQ(y2[i], b[i] + b[i]);
}

}  // namespace
