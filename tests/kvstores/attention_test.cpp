// attend() against a double-precision reference: causal and token-tree masks, GQA, sliding
// windows, head layouts, strided views, and independence from the thread count.
#include <cstring>

#include "kv_test_util.hpp"

using namespace kvtest;

namespace {

// f32 store vs the double reference, relative to the largest |V|: f32 rounding of 128-term dot
// products and of a softmax-weighted sum over a few hundred slots stays well below this.
constexpr double kF32Rel = 1e-5;
// Unit roundoff of f16 (11-bit significand) and half its smallest subnormal (absolute).
constexpr double kF16Unit = 1.0 / 2048;
constexpr double kF16Abs = 1.0 / (1 << 25);

constexpr std::uint32_t kHeadDim = 128, kHeads = 16, kKvHeads = 8, kPast = 300;

RefLayer rounded(const RefLayer& r) { return {round_f16(r.k), round_f16(r.v)}; }

float inv_sqrt(std::uint32_t d) { return 1.0f / std::sqrt(static_cast<float>(d)); }

struct Case {
  const char* type;
  std::uint32_t n_query;
  bool tree;
  std::uint32_t window;
};

std::string name(const Case& c) {
  return std::string(c.type) + " n_query " + std::to_string(c.n_query) + (c.tree ? " tree" : " causal") + " window " +
         std::to_string(c.window);
}

// Writes kPast committed tokens and n_query batch tokens to two layers, then compares each layer's
// attention with the reference over what the store holds (K/V rounded to f16 for an f16 store).
void expect_matches_reference(const Case& c) {
  SCOPED_TRACE(name(c));
  Harness h(c.type, geometry(2, kKvHeads, kHeadDim, kHeadDim, 512), 2, 7 + c.n_query);
  h.write_random(0, kPast);
  h.write_random(kPast, c.n_query);
  const Tree t = random_tree(h.rng, c.n_query);
  const auto q = uniform(h.rng, static_cast<std::size_t>(kHeadDim) * kHeads * c.n_query, 4.0f);
  AttentionBatch b;
  b.n_query = c.n_query;
  b.n_past = kPast;
  b.ancestor = mask_view(c.tree ? t.ancestor.data() : nullptr, c.n_query);
  b.scale = inv_sqrt(kHeadDim);
  b.sliding_window = c.window;
  const auto pos = c.tree ? tree_positions(kPast, t) : causal_positions(kPast, c.n_query);
  for (std::uint32_t layer = 0; layer < 2; ++layer) {
    const auto out = h.attend(layer, q, kHeads, b);
    const RefLayer kv = std::string(c.type) == "f16" ? rounded(h.layers[layer]) : h.layers[layer];
    const auto ref = reference_attention(kv, h.geom, q, kHeads, kPast, c.n_query, static_cast<const std::uint8_t*>(b.ancestor.data), pos, b.scale, c.window);
    EXPECT_LE(max_abs_diff(out, ref), kF32Rel * max_abs(kv.v)) << "layer " << layer;
  }
}

}  // namespace

TEST(kvAttention, CausalMatchesReference) {
  for (const char* type : {"f32", "f16"})
    for (std::uint32_t nq : {1u, 7u, 37u}) expect_matches_reference({type, nq, false, 0});  // 37: 3 query blocks
}

TEST(kvAttention, TokenTreeMaskMatchesReference) {
  for (const char* type : {"f32", "f16"})
    for (std::uint32_t nq : {7u, 16u, 37u}) expect_matches_reference({type, nq, true, 0});
}

TEST(kvAttention, SlidingWindowMatchesReference) {
  for (const char* type : {"f32", "f16"}) {
    expect_matches_reference({type, 7, false, 50});
    expect_matches_reference({type, 1, false, 1});
    expect_matches_reference({type, 16, true, 3});  // the window cuts into the tree itself
    expect_matches_reference({type, 16, true, 40});
    expect_matches_reference({type, 37, false, 20});  // queries of one block see different windows
    expect_matches_reference({type, 37, true, 3});
  }
}

// The f16 store against the reference on the unrounded K/V: within the bound that f16 rounding
// implies. |dk| <= u|k| + a per element moves each score by at most D = scale * sum |q| (u|k| + a);
// that moves the softmax weights by at most e^(2D) - 1 in total, and V rounding adds u|V| + a.
TEST(kvAttention, F16StoreStaysWithinTheRoundingBound) {
  constexpr std::uint32_t nq = 7;
  Harness h("f16", geometry(1, kKvHeads, kHeadDim, kHeadDim, 512), 2, 3);
  h.write_random(0, kPast + nq);
  const auto q = uniform(h.rng, static_cast<std::size_t>(kHeadDim) * kHeads * nq, 4.0f);
  AttentionBatch b;
  b.n_query = nq;
  b.n_past = kPast;
  b.scale = inv_sqrt(kHeadDim);
  const auto out = h.attend(0, q, kHeads, b);
  const RefLayer& raw = h.layers[0];
  const auto pos = causal_positions(kPast, nq);
  const auto ref_raw = reference_attention(raw, h.geom, q, kHeads, kPast, nq, nullptr, pos, b.scale, 0);
  const auto ref_rounded = reference_attention(rounded(raw), h.geom, q, kHeads, kPast, nq, nullptr, pos, b.scale, 0);
  const double vmax = max_abs(raw.v);
  double worst_raw = 0;
  for (std::uint32_t i = 0; i < nq; ++i)
    for (std::uint32_t hd = 0; hd < kHeads; ++hd) {
      const std::uint32_t g = hd / (kHeads / kKvHeads);
      double d_score = 0;
      for (std::uint32_t s = 0; s <= kPast + i; ++s) {
        double sum = 0;
        for (std::uint32_t d = 0; d < kHeadDim; ++d)
          sum += std::fabs(q[(static_cast<std::size_t>(i) * kHeads + hd) * kHeadDim + d]) *
                 (kF16Unit * std::fabs(raw.k[(static_cast<std::size_t>(s) * kKvHeads + g) * kHeadDim + d]) + kF16Abs);
        d_score = std::max(d_score, sum * b.scale);
      }
      const double bound = std::expm1(2 * d_score) * vmax * (1 + kF16Unit) + kF16Unit * vmax + kF16Abs + kF32Rel * vmax;
      for (std::uint32_t d = 0; d < kHeadDim; ++d) {
        const std::size_t at = (static_cast<std::size_t>(i) * kHeads + hd) * kHeadDim + d;
        ASSERT_LE(std::fabs(out[at] - ref_raw[at]), bound) << "query " << i << " head " << hd << " dim " << d;
        worst_raw = std::max(worst_raw, std::fabs(out[at] - ref_raw[at]));
      }
    }
  // Not vacuous: the store really rounds to f16 (it is much closer to the rounded reference).
  EXPECT_GT(worst_raw, 10 * max_abs_diff(out, ref_rounded));
  EXPECT_FALSE(h.store->lossless());
}

// Head h uses KV head h / (n_heads / n_kv_heads): with V constant per KV head, every output is
// that constant. 12 query heads over 4 KV heads tells h / 3 apart from the interleaved h % 4.
TEST(kvAttention, GroupedQueryHeadsUseTheirOwnKvHead) {
  const KvGeometry g = geometry(1, 4, 16, 8, 64);
  Harness h("f32", g);
  constexpr std::uint32_t n = 10, n_heads = 12;
  auto k = uniform(h.rng, static_cast<std::size_t>(n) * 4 * 16, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(n) * 4 * 8);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i / 8) % 4 + 1);
  h.write(0, 0, n, k, v);
  const auto q = uniform(h.rng, static_cast<std::size_t>(16) * n_heads * 2, 3.0f);
  AttentionBatch b;
  b.n_query = 2;
  b.n_past = n - 2;
  b.scale = 0.25f;
  const auto out = h.attend(0, q, n_heads, b);
  for (std::uint32_t i = 0; i < 2; ++i)
    for (std::uint32_t hd = 0; hd < n_heads; ++hd)
      for (std::uint32_t d = 0; d < 8; ++d)
        ASSERT_NEAR(out[(i * n_heads + hd) * 8 + d], hd / 3 + 1, 1e-5) << "query " << i << " head " << hd;
}

// MHA, MQA and head sizes that are not multiples of the kernel's 16 lanes, with K and V sizes
// that differ.
TEST(kvAttention, HeadLayoutsMatchReference) {
  struct Layout {
    std::uint32_t kv_heads, heads, dk, dv;
  };
  for (const Layout& lay : {Layout{4, 4, 64, 64}, Layout{1, 8, 72, 40}, Layout{2, 6, 3, 5}}) {
    SCOPED_TRACE("kv_heads " + std::to_string(lay.kv_heads) + " heads " + std::to_string(lay.heads) + " dk " +
                 std::to_string(lay.dk) + " dv " + std::to_string(lay.dv));
    Harness h("f32", geometry(1, lay.kv_heads, lay.dk, lay.dv, 128));
    h.write_random(0, 45);
    const auto q = uniform(h.rng, static_cast<std::size_t>(lay.dk) * lay.heads * 5, 2.0f);
    AttentionBatch b;
    b.n_query = 5;
    b.n_past = 40;
    b.scale = inv_sqrt(lay.dk);
    const auto out = h.attend(0, q, lay.heads, b);
    const auto ref =
        reference_attention(h.layers[0], h.geom, q, lay.heads, 40, 5, nullptr, causal_positions(40, 5), b.scale, 0);
    EXPECT_LE(max_abs_diff(out, ref), kF32Rel * max_abs(h.layers[0].v));
  }
}

// A window of 1 leaves only the query's own slot: the output is its V exactly. A window longer
// than the context changes nothing, bit for bit.
TEST(kvAttention, SlidingWindowEdges) {
  Harness h("f32", geometry(1, kKvHeads, kHeadDim, kHeadDim, 512));
  h.write_random(0, kPast + 3);
  const auto q = uniform(h.rng, static_cast<std::size_t>(kHeadDim) * kHeads * 3, 4.0f);
  AttentionBatch b;
  b.n_query = 3;
  b.n_past = kPast;
  b.scale = inv_sqrt(kHeadDim);
  const auto full = h.attend(0, q, kHeads, b);
  b.sliding_window = kPast + 3;
  EXPECT_EQ(h.attend(0, q, kHeads, b), full);
  b.sliding_window = 1;
  const auto own = h.attend(0, q, kHeads, b);
  for (std::uint32_t i = 0; i < 3; ++i)
    for (std::uint32_t hd = 0; hd < kHeads; ++hd)
      for (std::uint32_t d = 0; d < kHeadDim; ++d)
        ASSERT_EQ(own[(i * kHeads + hd) * kHeadDim + d],
                  h.layers[0].v[((kPast + i) * kKvHeads + hd / 2) * kHeadDim + d]);
}

// Work is split over (query, KV head) pairs that never share partial sums, so the thread count
// cannot change a single bit.
TEST(kvAttention, ThreadCountDoesNotChangeResults) {
  for (const char* type : {"f32", "f16"}) {
    std::vector<std::vector<float>> outs;
    for (std::int64_t threads : {1, 3, 2}) {
      Harness h(type, geometry(1, kKvHeads, kHeadDim, kHeadDim, 512), threads, 11);
      ASSERT_EQ(h.backend->n_threads(), static_cast<unsigned>(threads));
      h.write_random(0, kPast + 9);
      const Tree t = random_tree(h.rng, 9);
      const auto q = uniform(h.rng, static_cast<std::size_t>(kHeadDim) * kHeads * 9, 4.0f);
      AttentionBatch b;
      b.n_query = 9;
      b.n_past = kPast;
      b.ancestor = mask_view(t.ancestor.data(), 9);
      b.scale = inv_sqrt(kHeadDim);
      outs.push_back(h.attend(0, q, kHeads, b));
    }
    for (std::size_t r = 1; r < outs.size(); ++r)
      EXPECT_EQ(std::memcmp(outs[0].data(), outs[r].data(), outs[0].size() * sizeof(float)), 0) << type;
  }
}

// q may be the Q part of a fused QKV buffer and out may have padded rows; both are just strides.
TEST(kvAttention, StridedQueryAndOutputViews) {
  constexpr std::uint32_t dk = 32, dv = 32, heads = 4, kvh = 2, nq = 3, pad = 8;
  Harness h("f32", geometry(1, kvh, dk, dv, 64));
  h.write_random(0, 20);
  const auto q = uniform(h.rng, static_cast<std::size_t>(dk) * heads * nq, 2.0f);
  AttentionBatch b;
  b.n_query = nq;
  b.n_past = 17;
  b.scale = 0.2f;
  const auto want = h.attend(0, q, heads, b);

  const std::uint32_t fused_rows = heads + 2 * kvh;  // [q heads | k heads | v heads] per token
  std::vector<float> qkv(static_cast<std::size_t>(dk) * fused_rows * nq, 99.0f);
  for (std::uint32_t i = 0; i < nq; ++i)
    std::copy_n(&q[static_cast<std::size_t>(i) * heads * dk], heads * dk,
                &qkv[static_cast<std::size_t>(i) * fused_rows * dk]);
  TensorView qv = f32_view(qkv.data(), dk, heads, nq);
  qv.nb[2] = sizeof(float) * dk * fused_rows;
  std::vector<float> padded(static_cast<std::size_t>(dv + pad) * heads * nq, -7.0f);
  TensorView ov = f32_view(padded.data(), dv, heads, nq);
  ov.nb[1] = sizeof(float) * (dv + pad);
  ov.nb[2] = ov.nb[1] * heads;
  ASSERT_TRUE(h.store->attend(0, qv, b, ov).ok());
  for (std::uint32_t r = 0; r < heads * nq; ++r)
    for (std::uint32_t d = 0; d < dv + pad; ++d) {
      const float got = padded[static_cast<std::size_t>(r) * (dv + pad) + d];
      if (d < dv)
        ASSERT_EQ(got, want[static_cast<std::size_t>(r) * dv + d]) << "row " << r;
      else
        ASSERT_EQ(got, -7.0f) << "padding of row " << r << " was written";
    }
}

// A query that may see nothing gets zeros (not 0/0 = NaN); an empty batch is a no-op.
TEST(kvAttention, QueryThatSeesNothingGivesZeros) {
  Harness h("f16", geometry(1, 2, 16, 16, 16));
  h.write_random(0, 2);
  const auto q = uniform(h.rng, 16 * 4 * 2, 1.0f);
  const std::uint8_t none[4] = {0, 0, 0, 0};
  AttentionBatch b;
  b.n_query = 2;
  b.ancestor = mask_view(none, 2);
  for (float x : h.attend(0, q, 4, b)) ASSERT_EQ(x, 0.0f);
  b.n_query = 0;
  EXPECT_TRUE(h.store->attend(0, f32_view(nullptr, 16, 4, 0), b, f32_view(nullptr, 16, 4, 0)).ok());
}
