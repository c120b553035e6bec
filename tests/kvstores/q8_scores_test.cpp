// Integer scores against a q8_0 K (docs/kvstores.md, "Attention kernel"): the query rounded to q8_0,
// each block's int8 products summed exactly, the two scales applied once per block and lane. Every
// kernel table (AVX2, AVX-512 with and without VNNI) against a plain implementation of that order,
// bit for bit, at the extremes of the int8 range too; whole attend() calls at every level against
// the documented order, decode and verification alike (a token tree scored chunk by chunk must give
// the bits a decode step gives, or speculation would not be lossless).
#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "attention.hpp"
#include "attention_kernels.hpp"
#include "cache_rows.hpp"
#include "formats/q8_0/q8_0_rows.hpp"
#include "half.hpp"
#include "kv_test_util.hpp"
#include "query_q8.hpp"
#include "softmax_exp.hpp"

using namespace kvtest;
using graft::quant::block_q8_0;

namespace {

struct RoundedQuery {
  std::vector<std::int8_t> qs;
  std::vector<float> d;
  kv::QueryQ8 view() const { return {qs.data(), d.data()}; }
};
RoundedQuery round_query(const float* x, std::uint32_t n) {
  RoundedQuery r{std::vector<std::int8_t>(n), std::vector<float>(n / 32)};
  kv::quantize_query_q8(x, n, r.qs.data(), r.d.data());
  return r;
}

// The documented order, written plainly: lane l of block b is the integer sum of elements
// 4l..4l+3, a[l] = fma(float(P), f16(d_k) * d_q, a[l]) block after block, then the fold.
float reference_score(const kv::QueryQ8& q, const block_q8_0* k, std::uint32_t d, float scale) {
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  for (std::uint32_t b = 0; b < d / 32; ++b) {
    const float s = graft::f16_to_f32(k[b].d) * q.d[b];
    for (int l = 0; l < 8; ++l) {
      std::int32_t p = 0;
      for (int i = 4 * l; i < 4 * l + 4; ++i) p += q.qs[32 * b + i] * k[b].qs[i];
      a[l] = std::fma(static_cast<float>(p), s, a[l]);
    }
  }
  const float fold = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
  return (fold + 0.0f) * scale;
}

std::vector<block_q8_0> q8_rows(const std::vector<float>& x, std::uint32_t d) {
  std::vector<block_q8_0> rows(x.size() / 32);
  for (std::size_t r = 0; r < x.size() / d; ++r) kv::encode_row(kv::CacheType::q8_0, &x[r * d], d, &rows[r * d / 32]);
  return rows;
}

::testing::AssertionResult same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  for (std::size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (std::bit_cast<std::uint32_t>(got[i]) != std::bit_cast<std::uint32_t>(want[i]))
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Every table's scores for one or two heads against n rows, against the reference.
void expect_tables_match(const std::vector<RoundedQuery>& q, const std::vector<block_q8_0>& rows, std::uint32_t d,
                         float scale) {
  const std::uint32_t n = static_cast<std::uint32_t>(rows.size() * 32 / d);
  std::vector<const block_q8_0*> ptrs(n);
  for (std::uint32_t j = 0; j < n; ++j) ptrs[j] = &rows[static_cast<std::size_t>(j) * d / 32];
  const auto tables = simd_tables();
  for (std::uint32_t nh = 1; nh <= q.size(); ++nh) {
    std::vector<std::vector<float>> want(nh, std::vector<float>(n));
    kv::QueryQ8 views[2];
    for (std::uint32_t h = 0; h < nh; ++h) {
      views[h] = q[h].view();
      for (std::uint32_t j = 0; j < n; ++j) want[h][j] = reference_score(views[h], ptrs[j], d, scale);
    }
    for (const SimdTable& t : tables) {
      std::vector<std::vector<float>> got(nh, std::vector<float>(n, NAN));
      float* outs[2] = {got[0].data(), got[nh - 1].data()};
      t.k->scores_q8_0(views, nh, ptrs.data(), n, d, scale, outs, n);
      for (std::uint32_t h = 0; h < nh; ++h)
        EXPECT_TRUE(same_bits(got[h], want[h])) << t.name << ", d " << d << ", " << nh << " heads, head " << h;
    }
  }
}

}  // namespace

// ggml's rounding of a query block: d = amax / 127, halfway cases away from zero, zeros for a zero
// block; a non-finite element makes the block's scale NaN and its levels 0, and a subnormal block
// still gives levels inside int8.
TEST(kvQ8Scores, QueryRoundingFollowsGgmlsQuantizer) {
  std::vector<float> x(128, 0.0f);
  x[0] = 127.0f, x[1] = 2.5f, x[2] = -2.5f, x[3] = 0.49f, x[4] = -127.0f, x[5] = 63.5f;  // d = 1
  x[64] = std::numeric_limits<float>::infinity(), x[65] = 3.0f;                         // block 2
  x[96] = 0x1p-140f, x[97] = -0x1p-149f;                                                // subnormal
  const RoundedQuery r = round_query(x.data(), 128);
  EXPECT_EQ(r.d[0], 1.0f);
  EXPECT_EQ(r.qs[0], 127);
  EXPECT_EQ(r.qs[1], 3);
  EXPECT_EQ(r.qs[2], -3);
  EXPECT_EQ(r.qs[3], 0);
  EXPECT_EQ(r.qs[4], -127);
  EXPECT_EQ(r.qs[5], 64);
  EXPECT_EQ(r.d[1], 0.0f);
  for (int i = 32; i < 64; ++i) EXPECT_EQ(r.qs[i], 0);
  EXPECT_TRUE(std::isnan(r.d[2]));
  EXPECT_EQ(r.qs[65], 0);
  for (int i = 96; i < 128; ++i) EXPECT_LE(std::abs(int{r.qs[i]}), 127);
  // against ggml's own quantizer: the same levels (its scale is the f16 of ours)
  std::mt19937 rng(5);
  const auto y = uniform(rng, 256, 3.0f);
  const RoundedQuery ry = round_query(y.data(), 256);
  std::vector<block_q8_0> g(8);
  graft::quant::quantize_row_q8_0(y.data(), g.data(), 256);
  for (int b = 0; b < 8; ++b) {
    EXPECT_EQ(graft::f32_to_f16_ggml(ry.d[b]), g[b].d);
    EXPECT_EQ(std::memcmp(&ry.qs[32 * b], g[b].qs, 32), 0) << "block " << b;
  }
}

// Random rows at the head sizes models use, 1 to 40 rows (the tables' batch edges), one and two
// heads; then the extremes: every level +-127 (and -128, which a cache written elsewhere may hold)
// against queries of +-127, where a saturating int16 pair or a lost offset would show.
TEST(kvQ8Scores, EveryTableMatchesTheDocumentedIntegerOrder) {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU has no AVX2: only the portable kernel runs (tested below)";
  std::mt19937 rng(11);
  for (std::uint32_t d : {32u, 64u, 128u, 256u})
    for (std::uint32_t n : {1u, 7u, 16u, 17u, 40u}) {
      std::vector<RoundedQuery> q;
      for (int h = 0; h < 2; ++h) q.push_back(round_query(uniform(rng, d, 4.0f).data(), d));
      expect_tables_match(q, q8_rows(uniform(rng, std::size_t{n} * d, 1.0f), d), d, 0.125f);
    }
  for (std::int8_t kq : {std::int8_t{127}, std::int8_t{-127}, std::int8_t{-128}})
    for (std::int8_t qq : {std::int8_t{127}, std::int8_t{-127}}) {
      constexpr std::uint32_t d = 64, n = 18;
      std::vector<block_q8_0> rows(n * d / 32);
      for (std::size_t b = 0; b < rows.size(); ++b) {
        rows[b].d = graft::f32_to_f16(b % 3 ? 0.5f : 3.0f);
        std::memset(rows[b].qs, static_cast<unsigned char>(kq), 32);
        if (b % 2) rows[b].qs[5] = static_cast<std::int8_t>(-kq / 2);  // not every lane alike
      }
      RoundedQuery r{std::vector<std::int8_t>(d, qq), {0.25f, 2.0f}};
      RoundedQuery r2{std::vector<std::int8_t>(d, static_cast<std::int8_t>(-qq)), {1.0f, 0.5f}};
      expect_tables_match({r, r2}, rows, d, 1.0f);
      // the reference itself against exact arithmetic (small integers times powers of two and 3)
      double exact = 0.0;
      for (std::uint32_t b = 0; b < d / 32; ++b) {
        double dot = 0.0;
        for (int i = 0; i < 32; ++i) dot += static_cast<double>(r.qs[32 * b + i]) * rows[b].qs[i];
        exact += dot * graft::f16_to_f32(rows[b].d) * r.d[b];
      }
      EXPECT_EQ(reference_score(r.view(), rows.data(), d, 1.0f), exact);
    }
}

// One attend() call against the documented order at every level: K q8_0 (its scores as above), V
// f32 or q8_0 (the values' f32 operations on dequantized rows), decode steps across the batch and
// chunk edges, and causal batches and token trees with windows, which go chunk by chunk.
TEST(kvQ8Scores, AttendAtEveryLevelMatchesTheDocumentedOrder) {
  std::mt19937 rng(31);
  struct Case {
    std::uint32_t d, n_kv, n_rep, n_past, n_query, window;
    bool tree;
    kv::CacheType v_type;
  };
  std::vector<Case> cases;
  for (std::uint32_t past : {0u, 1u, 15u, 16u, 17u, 63u, 64u, 65u, 300u})
    cases.push_back({64, 8, 2, past, 1, 0, false, kv::CacheType::q8_0});
  cases.push_back({128, 2, 4, 200, 9, 0, true, kv::CacheType::q8_0});
  cases.push_back({128, 2, 4, 200, 9, 50, true, kv::CacheType::f32});
  cases.push_back({64, 4, 1, 150, 20, 0, false, kv::CacheType::f32});
  cases.push_back({256, 1, 3, 70, 5, 30, false, kv::CacheType::q8_0});
  cases.push_back({32, 2, 2, 100, 1, 40, false, kv::CacheType::f32});
  for (const Case& c : cases) {
    SCOPED_TRACE("d " + std::to_string(c.d) + " past " + std::to_string(c.n_past) + " queries " +
                 std::to_string(c.n_query) + " window " + std::to_string(c.window));
    const std::uint32_t heads = c.n_kv * c.n_rep, slots = c.n_past + c.n_query;
    // head-major caches, as the store keeps them: [kv head][slot][d]
    const auto k = uniform(rng, std::size_t{slots} * c.n_kv * c.d, 1.0f);
    const auto v = uniform(rng, std::size_t{slots} * c.n_kv * c.d, 1.0f);
    auto at = [&](std::uint32_t slot, std::uint32_t g) { return (std::size_t{g} * slots + slot) * c.d; };
    const auto q = uniform(rng, std::size_t{c.n_query} * heads * c.d, 2.0f);
    const Tree tree = random_tree(rng, c.n_query);
    const auto kc = q8_rows(k, c.d);
    std::vector<float> vf(v);  // V as the kernels see it
    std::vector<block_q8_0> vq;
    if (c.v_type == kv::CacheType::q8_0) {
      vq = q8_rows(v, c.d);
      graft::quant::dequantize_row_q8_0(vq.data(), vf.data(), static_cast<std::int64_t>(vf.size()));
    }
    // positions: a query's depth in the tree (or its index when causal)
    std::vector<std::uint32_t> pos(c.n_query);
    auto sees = [&](std::uint32_t i, std::uint32_t j) { return c.tree ? tree.ancestor[i * c.n_query + j] != 0 : j <= i; };
    for (std::uint32_t i = 0; i < c.n_query; ++i) {
      std::uint32_t depth = 0;
      for (std::uint32_t j = 0; j < c.n_query; ++j) depth += j != i && sees(i, j);
      pos[i] = c.n_past + depth;
    }
    auto visible = [&](std::uint32_t i, std::uint32_t kpos) { return c.window == 0 || pos[i] - kpos < c.window; };
    std::vector<float> want(std::size_t{c.n_query} * heads * c.d);
    for (std::uint32_t i = 0; i < c.n_query; ++i)
      for (std::uint32_t h = 0; h < heads; ++h) {
        const std::uint32_t g = h / c.n_rep;
        const RoundedQuery rq = round_query(&q[(std::size_t{i} * heads + h) * c.d], c.d);
        std::vector<std::uint32_t> seen;
        for (std::uint32_t s = 0; s < c.n_past; ++s)
          if (visible(i, s)) seen.push_back(s);
        for (std::uint32_t j = 0; j < c.n_query; ++j)
          if (sees(i, j) && visible(i, pos[j])) seen.push_back(c.n_past + j);
        float* o = &want[(std::size_t{i} * heads + h) * c.d];
        if (seen.empty()) continue;
        std::vector<float> p(seen.size());
        for (std::size_t t = 0; t < seen.size(); ++t)
          p[t] = reference_score(rq.view(), &kc[at(seen[t], g) / 32], c.d, 0.1f);
        float m = -INFINITY;
        for (float x : p) m = std::max(m, x);
        float sum = 0.0f;
        for (float& x : p) sum = sum + (x = kv::softmax_exp(x - m));
        std::vector<float> acc(c.d, 0.0f);
        for (std::size_t t = 0; t < seen.size(); ++t)
          for (std::uint32_t e = 0; e < c.d; ++e)
            acc[e] = std::fma(p[t], vf[at(seen[t], g) + e], acc[e]);
        const float inv = 1.0f / sum;
        for (std::uint32_t e = 0; e < c.d; ++e) o[e] = acc[e] * inv;
      }
    kv::LayerCache lc;
    lc.k = kc.data();
    lc.v = c.v_type == kv::CacheType::q8_0 ? static_cast<const void*>(vq.data()) : v.data();
    lc.k_type = kv::CacheType::q8_0;
    lc.v_type = c.v_type;
    lc.n_kv_heads = c.n_kv;
    lc.head_dim_k = lc.head_dim_v = c.d;
    lc.capacity = slots;
    AttentionBatch b;
    b.n_past = c.n_past;
    b.n_query = c.n_query;
    b.ancestor = c.tree ? mask_view(tree.ancestor.data(), c.n_query) : TensorView{};
    b.scale = 0.1f;
    b.sliding_window = static_cast<std::int32_t>(c.window);
    for (auto level : {kv::AttnSimd::scalar, kv::AttnSimd::avx2, kv::AttnSimd::avx512}) {
      if (!kv::cpu_supports(level)) continue;
      for (std::int64_t threads : {1, 2}) {
        auto backend = cpu_backend(threads);
        std::vector<float> out(want.size(), NAN);
        const graft::Status st = kv::attend(*backend, lc, f32_view(const_cast<float*>(q.data()), c.d, heads, c.n_query),
                                            b, f32_view(out.data(), c.d, heads, c.n_query), level);
        ASSERT_TRUE(st.ok()) << st.message();
        EXPECT_TRUE(same_bits(out, want)) << graft::simd_level_name(level) << ", " << threads << " threads";
      }
    }
  }
}
