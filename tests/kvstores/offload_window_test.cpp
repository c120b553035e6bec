// The sysram store's rules (plugins/kvstores/sysram/offload_window.hpp): where the device window
// moves, what attention reads from system RAM, the refills after a rollback, the retrieval mode's
// block choice and bound, and the merge of attention over pieces by log-sum-exp, which the CPU
// kernels now report at every SIMD level (tested against a double-precision reference).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

#include "attention.hpp"
#include "cache_rows.hpp"
#include "kv_test_util.hpp"
#include "offload_window.hpp"

using namespace graft;
using namespace graft::kv;

namespace {

TEST(OffloadWindow, MovesByWholeChunksKeepingTheNewestSlots) {
  OffloadWindow w(4096, 256, 64);
  EXPECT_EQ(w.device_rows(), 320u);
  // Up to 320 slots fit without a move.
  auto m = w.before_write(300, 20, 300);
  ASSERT_TRUE(m) << m.status().message();
  EXPECT_EQ(m->shift, 0u);
  // 321 slots: one chunk moves out, the other 256 rows move down.
  m = w.before_write(320, 1, 320);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->shift, 64u);
  EXPECT_EQ(m->keep, 256u);
  w.moved(*m);
  EXPECT_EQ(w.base(), 64u);
  // A rewrite of slots the window holds moves nothing.
  m = w.before_write(100, 32, 321);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->shift, 0u);
  // A pass of more than a chunk, or below the window, is refused with why.
  auto big = w.before_write(321, 65, 321);
  ASSERT_FALSE(big);
  EXPECT_EQ(big.status().message(), "kvstore sysram: a write of 65 tokens is more than chunk = 64 (a pass adds at most "
                                    "chunk tokens: raise chunk to the batch size)");
  auto low = w.before_write(10, 1, 321);
  ASSERT_FALSE(low);
  EXPECT_EQ(low.status().message(), "kvstore sysram: write at slot 10 below the device window, which starts at 64");
  // A small context never moves: the window is the whole of it.
  OffloadWindow small(300, 256, 64);
  EXPECT_EQ(small.device_rows(), 300u);
}

TEST(OffloadWindow, AttentionReadsTheOlderSlotsInChunksAndRollbackRefills) {
  OffloadWindow w(8192, 256, 64);
  std::uint32_t end = 0;
  for (std::uint32_t slot = 0; slot < 1000; slot += 40) {
    auto m = w.before_write(slot, 40, end);
    ASSERT_TRUE(m);
    w.moved(*m);
    end = slot + 40;
    ASSERT_LE(end - w.base(), w.device_rows());
    if (end > 320) {
      ASSERT_GE(end - w.base(), 256u) << "the window keeps at least its size once the context is past it";
    }
  }
  EXPECT_EQ(w.base() % 64, 0u);
  auto pieces = w.host_pieces(end - 1);
  ASSERT_TRUE(pieces);
  std::uint32_t covered = 0;
  for (const SlotRange& p : *pieces) {
    EXPECT_EQ(p.begin, covered);
    EXPECT_LE(p.size(), 64u);
    covered = p.end;
  }
  EXPECT_EQ(covered, w.base()) << "every slot below the window, once, in order";
  EXPECT_FALSE(w.host_pieces(w.base() - 1)) << "a batch below the window";
  // Rollback within the window: nothing to copy; below it: the window refilled up to the cut.
  const std::uint32_t base = w.base();
  EXPECT_EQ(w.after_truncate(base + 5).size(), 0u);
  EXPECT_EQ(w.base(), base);
  const SlotRange r = w.after_truncate(500);
  EXPECT_EQ(r, (SlotRange{192, 500}));
  EXPECT_EQ(w.base(), 192u);
  EXPECT_EQ(w.after_truncate(100), (SlotRange{0, 100}));
}

TEST(OffloadWindow, BestBlocksAreTheHighestScoresInSlotOrder) {
  const std::vector<float> scores = {0.5f, 3.0f, 1.0f, 3.0f, -2.0f, 2.0f};
  const auto b = best_blocks(scores, 4, 4 + 5 * 64 + 10, 64, 3);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (SlotRange{4 + 64, 4 + 128}));
  EXPECT_EQ(b[1], (SlotRange{4 + 192, 4 + 256}));
  EXPECT_EQ(b[2], (SlotRange{4 + 320, 4 + 330})) << "the last block is short";
  EXPECT_EQ(best_blocks(scores, 0, 384, 64, 10).size(), 6u);
}

TEST(OffloadWindow, ABlocksBoundIsAtLeastEveryKeysProduct) {
  std::mt19937 rng(7);
  std::normal_distribution<float> n(0.0f, 1.0f);
  const std::uint32_t dim = 64;
  std::vector<float> q(dim), lo(dim, 1e30f), hi(dim, -1e30f), keys(32 * dim);
  for (float& x : q) x = n(rng);
  for (std::uint32_t t = 0; t < 32; ++t)
    for (std::uint32_t d = 0; d < dim; ++d) {
      const float k = keys[t * dim + d] = n(rng);
      lo[d] = std::min(lo[d], k);
      hi[d] = std::max(hi[d], k);
    }
  const float bound = block_bound(q.data(), lo.data(), hi.data(), dim);
  for (std::uint32_t t = 0; t < 32; ++t) {
    float dot = 0.0f;
    for (std::uint32_t d = 0; d < dim; ++d) dot += q[d] * keys[t * dim + d];
    EXPECT_GE(bound, dot);
  }
}

// Attention over a cache split in two at every point, each piece with its log-sum-exp and merged,
// equals the attention over the whole (f64 reference), at every SIMD level the CPU has; the
// reported log-sum-exp is the reference's.
TEST(OffloadWindow, PiecesMergedByLogSumExpAreTheWholeAttention) {
  auto backend = kvtest::cpu_backend(1);
  const std::uint32_t heads = 2, n_heads = 4, dim = 64, slots = 300, nq = 3;
  std::mt19937 rng(11);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> k(std::size_t(slots) * heads * dim), v(k.size()), q(std::size_t(nq) * n_heads * dim);
  for (float& x : k) x = n(rng);
  for (float& x : v) x = n(rng);
  for (float& x : q) x = n(rng);
  // Head-major f32 cache [head][slot][dim].
  std::vector<float> kc(k.size()), vc(v.size());
  for (std::uint32_t h = 0; h < heads; ++h)
    for (std::uint32_t t = 0; t < slots; ++t)
      for (std::uint32_t d = 0; d < dim; ++d) {
        kc[(std::size_t(h) * slots + t) * dim + d] = k[(std::size_t(t) * heads + h) * dim + d];
        vc[(std::size_t(h) * slots + t) * dim + d] = v[(std::size_t(t) * heads + h) * dim + d];
      }
  const float scale = 0.125f;
  // The reference: every query sees every slot (the committed prefix).
  std::vector<double> want(std::size_t(nq) * n_heads * dim), want_lse(std::size_t(nq) * n_heads);
  for (std::uint32_t i = 0; i < nq; ++i)
    for (std::uint32_t h = 0; h < n_heads; ++h) {
      const std::uint32_t g = h / (n_heads / heads);
      std::vector<double> s(slots);
      double m = -1e300;
      for (std::uint32_t t = 0; t < slots; ++t) {
        double dot = 0;
        for (std::uint32_t d = 0; d < dim; ++d)
          dot += double(q[(std::size_t(i) * n_heads + h) * dim + d]) * kc[(std::size_t(g) * slots + t) * dim + d];
        s[t] = dot * scale;
        m = std::max(m, s[t]);
      }
      double sum = 0;
      for (double& x : s) sum += (x = std::exp(x - m));
      want_lse[i * n_heads + h] = m + std::log(sum);
      for (std::uint32_t d = 0; d < dim; ++d) {
        double o = 0;
        for (std::uint32_t t = 0; t < slots; ++t) o += s[t] * vc[(std::size_t(g) * slots + t) * dim + d];
        want[(std::size_t(i) * n_heads + h) * dim + d] = o / sum;
      }
    }
  std::vector<std::uint8_t> none(nq * nq, 0);
  TensorView mask{};
  mask.data = none.data();
  mask.type = type_id::i8;
  mask.n_dims = 2;
  mask.ne[0] = nq, mask.ne[1] = nq, mask.ne[2] = 1, mask.ne[3] = 1;
  mask.nb[0] = 1, mask.nb[1] = nq, mask.nb[2] = mask.nb[3] = nq * nq;
  for (AttnSimd level : {AttnSimd::scalar, AttnSimd::avx2, AttnSimd::avx512}) {
    if (!cpu_supports(level)) continue;
    SCOPED_TRACE(simd_level_name(level));
    for (std::uint32_t cut : {1u, 64u, 150u, 299u}) {
      std::vector<float> a(want.size()), b(want.size()), la(want_lse.size()), lb(want_lse.size());
      const std::uint32_t parts[2][2] = {{0, cut}, {cut, slots}};
      float* outs[2] = {a.data(), b.data()};
      float* lses[2] = {la.data(), lb.data()};
      for (int p = 0; p < 2; ++p) {
        const LayerCache c{kc.data() + std::size_t(parts[p][0]) * dim, vc.data() + std::size_t(parts[p][0]) * dim,
                           CacheType::f32, CacheType::f32, heads, dim, dim, slots};
        const AttentionBatch batch{nq, parts[p][1] - parts[p][0], mask, scale, 0};
        ASSERT_TRUE(attend(*backend, c, f32_view(q.data(), dim, n_heads, nq), batch,
                           f32_view(outs[p], dim, n_heads, nq), level, lses[p])
                        .ok());
      }
      merge_attention(a.data(), la.data(), b.data(), lb.data(), nq * n_heads, dim);
      for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(a[i], want[i], 1e-5) << "cut " << cut << " at " << i;
      for (std::size_t i = 0; i < want_lse.size(); ++i) ASSERT_NEAR(la[i], want_lse[i], 2e-5) << "cut " << cut;
    }
  }
  // A piece that saw nothing leaves the other as it is.
  std::vector<float> o = {1, 2}, l = {0.5f}, o2 = {7, 7}, l2 = {-std::numeric_limits<float>::infinity()};
  merge_attention(o.data(), l.data(), o2.data(), l2.data(), 1, 2);
  EXPECT_EQ(o, (std::vector<float>{1, 2}));
  EXPECT_EQ(l[0], 0.5f);
}

}  // namespace
