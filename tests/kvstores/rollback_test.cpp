// Speculative rollback: the size rule across layers, truncate, and compact of an accepted tree
// path. The property that matters: after a round, the store behaves exactly like one that only
// ever saw the accepted tokens.
#include <cstring>

#include "kv_test_util.hpp"

using namespace kvtest;

namespace {

constexpr std::uint32_t kHeadDim = 128, kHeads = 16, kKvHeads = 8, kPast = 300, kLayers = 2;

// K and V of n tokens for every layer, in write() layout.
struct Tokens {
  std::uint32_t n = 0;
  std::vector<std::vector<float>> k, v;
  // Tokens `pick` (ascending indices into this batch), in that order.
  Tokens select(const std::vector<std::uint32_t>& pick, const KvGeometry& g) const {
    Tokens t;
    t.n = static_cast<std::uint32_t>(pick.size());
    const std::size_t kr = static_cast<std::size_t>(g.n_kv_heads) * g.head_dim_k,
                      vr = static_cast<std::size_t>(g.n_kv_heads) * g.head_dim_v;
    for (std::size_t l = 0; l < k.size(); ++l) {
      t.k.emplace_back();
      t.v.emplace_back();
      for (std::uint32_t p : pick) {
        t.k[l].insert(t.k[l].end(), k[l].begin() + p * kr, k[l].begin() + (p + 1) * kr);
        t.v[l].insert(t.v[l].end(), v[l].begin() + p * vr, v[l].begin() + (p + 1) * vr);
      }
    }
    return t;
  }
};

Tokens random_tokens(std::mt19937& rng, const KvGeometry& g, std::uint32_t n) {
  Tokens t;
  t.n = n;
  for (std::uint32_t l = 0; l < g.n_layers; ++l) {
    t.k.push_back(uniform(rng, static_cast<std::size_t>(n) * g.n_kv_heads * g.head_dim_k, 1.0f));
    t.v.push_back(uniform(rng, static_cast<std::size_t>(n) * g.n_kv_heads * g.head_dim_v, 1.0f));
  }
  return t;
}

void write_all(Harness& h, std::uint32_t slot, const Tokens& t) {
  for (std::uint32_t l = 0; l < h.geom.n_layers; ++l) h.write(l, slot, t.n, t.k[l], t.v[l]);
}

bool bitwise_equal(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

AttentionBatch batch(std::uint32_t n_past, std::uint32_t n_query, const std::uint8_t* ancestor = nullptr,
                     std::uint32_t window = 0) {
  AttentionBatch b;
  b.n_past = n_past;
  b.n_query = n_query;
  b.ancestor = mask_view(ancestor, n_query);
  b.scale = 1.0f / std::sqrt(static_cast<float>(kHeadDim));
  b.sliding_window = window;
  return b;
}

// Rows of out [dim, n_heads, n_query] for the chosen queries, in order.
std::vector<float> query_rows(const std::vector<float>& out, const std::vector<std::uint32_t>& pick,
                              std::size_t per_query) {
  std::vector<float> r;
  for (std::uint32_t p : pick) r.insert(r.end(), out.begin() + p * per_query, out.begin() + (p + 1) * per_query);
  return r;
}

const KvGeometry kGeom = geometry(kLayers, kKvHeads, kHeadDim, kHeadDim, 512);

}  // namespace

TEST(kvRollback, TruncateThenRewriteEqualsAFreshStore) {
  for (const char* type : {"f32", "f16", "q8_0/q8_0", "q4_0/f16", "f16/q4_0", "q8_0/tq3", "tq3/tq3"}) {
    SCOPED_TRACE(type);
    std::mt19937 rng(5);
    const Tokens prefix = random_tokens(rng, kGeom, kPast), rejected = random_tokens(rng, kGeom, 9),
                 accepted = random_tokens(rng, kGeom, 7);
    const auto q = uniform(rng, static_cast<std::size_t>(kHeadDim) * kHeads * 7, 4.0f);

    Harness a(type, kGeom), fresh(type, kGeom);
    write_all(a, 0, prefix);
    write_all(a, kPast, rejected);
    EXPECT_EQ(a.store->size(), kPast + 9);
    ASSERT_TRUE(a.store->truncate(kPast).ok());
    EXPECT_EQ(a.store->size(), kPast);
    write_all(a, kPast, accepted);
    write_all(fresh, 0, prefix);
    write_all(fresh, kPast, accepted);
    EXPECT_EQ(a.store->size(), fresh.store->size());
    for (std::uint32_t l = 0; l < kLayers; ++l)
      EXPECT_TRUE(bitwise_equal(a.attend(l, q, kHeads, batch(kPast, 7)), fresh.attend(l, q, kHeads, batch(kPast, 7))))
          << "layer " << l;
  }
}

// Verify a token tree, accept a root-to-node path, compact it into place: (1) each accepted node's
// attention during verification equals that token's attention on a plain chain, and (2) after
// compact the next step's attention equals that of a store that only saw the accepted tokens,
// bit for bit. With a sliding window (2) holds only if the window counts tree depth, not slots.
TEST(kvRollback, CompactedTreePathEqualsStoreThatSawOnlyThePath) {
  constexpr std::uint32_t n_tree = 12;
  for (const char* type : {"f32", "f16", "q8_0/q8_0", "q8_0/q4_0", "q4_0/f32", "tq3/q8_0"})
    for (std::uint32_t window : {0u, 4u}) {
      std::mt19937 rng(9);
      const Tree tree = random_tree(rng, n_tree);
      const std::uint32_t deepest =
          static_cast<std::uint32_t>(std::max_element(tree.depth.begin(), tree.depth.end()) - tree.depth.begin());
      for (std::uint32_t leaf : {deepest, n_tree - 1, n_tree / 2}) {
        SCOPED_TRACE(std::string(type) + " window " + std::to_string(window) + " leaf " + std::to_string(leaf));
        const auto path = tree.path_to(leaf);
        const auto n_path = static_cast<std::uint32_t>(path.size());
        const Tokens prefix = random_tokens(rng, kGeom, kPast), nodes = random_tokens(rng, kGeom, n_tree),
                     next = random_tokens(rng, kGeom, 1);
        const auto q_tree = uniform(rng, static_cast<std::size_t>(kHeadDim) * kHeads * n_tree, 4.0f);
        const auto q_next = uniform(rng, static_cast<std::size_t>(kHeadDim) * kHeads, 4.0f);
        std::vector<float> q_path;
        for (std::uint32_t p : path)
          q_path.insert(q_path.end(), q_tree.begin() + p * kHeadDim * kHeads,
                        q_tree.begin() + (p + 1) * kHeadDim * kHeads);

        Harness a(type, kGeom), chain(type, kGeom);
        write_all(a, 0, prefix);
        write_all(a, kPast, nodes);
        write_all(chain, 0, prefix);
        write_all(chain, kPast, nodes.select(path, kGeom));
        for (std::uint32_t l = 0; l < kLayers; ++l) {
          const auto verified = a.attend(l, q_tree, kHeads, batch(kPast, n_tree, tree.ancestor.data(), window));
          const auto plain = chain.attend(l, q_path, kHeads, batch(kPast, n_path, nullptr, window));
          EXPECT_TRUE(bitwise_equal(query_rows(verified, path, kHeadDim * kHeads), plain))
              << "verification, layer " << l;
        }

        std::vector<std::uint32_t> src;
        for (std::uint32_t p : path) src.push_back(kPast + p);
        ASSERT_TRUE(a.store->compact(kPast, src).ok());
        ASSERT_EQ(a.store->size(), kPast + n_path);
        write_all(a, kPast + n_path, next);
        write_all(chain, kPast + n_path, next);
        for (std::uint32_t l = 0; l < kLayers; ++l)
          EXPECT_TRUE(bitwise_equal(a.attend(l, q_next, kHeads, batch(kPast + n_path, 1, nullptr, window)),
                                    chain.attend(l, q_next, kHeads, batch(kPast + n_path, 1, nullptr, window))))
              << "next step, layer " << l;
      }
    }
}

// size() counts the slots written in every layer: a forward pass raises it when its last layer is
// written; a pass that stops half way leaves it, and the next pass simply rewrites those slots.
TEST(kvRollback, SizeCountsSlotsPresentInEveryLayer) {
  const KvGeometry g = geometry(3, 2, 16, 16, 64);
  Harness h("f32", g);
  h.write_random(0, 10);
  EXPECT_EQ(h.store->size(), 10u);
  const Tokens t = [&] {
    std::mt19937 rng(3);
    return random_tokens(rng, g, 4);
  }();
  const auto q = uniform(h.rng, 16 * 4 * 4, 1.0f);
  h.write(0, 10, 4, t.k[0], t.v[0]);
  EXPECT_EQ(h.store->size(), 10u);
  h.attend(0, q, 4, batch(10, 4));  // layer 0 already holds the batch: allowed mid-pass
  std::vector<float> out(16 * 4 * 4);
  Status early = h.store->attend(1, f32_view(const_cast<float*>(q.data()), 16, 4, 4), batch(10, 4),
                                 f32_view(out.data(), 16, 4, 4));
  EXPECT_EQ(early.code(), Errc::out_of_range);
  EXPECT_NE(early.message().find("layer 1 has 10 filled"), std::string::npos) << early.message();
  h.write(1, 10, 4, t.k[1], t.v[1]);
  EXPECT_EQ(h.store->size(), 10u);
  h.write(2, 10, 4, t.k[2], t.v[2]);
  EXPECT_EQ(h.store->size(), 14u);

  // An aborted pass: layer 0 only. size stays, a gap is refused, a rewrite from size works.
  h.write(0, 14, 3, std::vector<float>(16 * 2 * 3, 1.0f), std::vector<float>(16 * 2 * 3, 1.0f));
  EXPECT_EQ(h.store->size(), 14u);
  const std::vector<float> one(16 * 2, 0.5f);
  Status gap = h.store->write(1, 15, 1, h.kview(one, 1), h.vview(one, 1));
  EXPECT_EQ(gap.code(), Errc::invalid_argument);
  EXPECT_EQ(gap.message(),
            "kvstore device: write: slot 15 would leave a gap: 14 slots are filled, so a write may "
            "start at slot 14 at most");
  for (std::uint32_t l = 0; l < 3; ++l) h.write(l, 14, 1, one, one);
  EXPECT_EQ(h.store->size(), 15u);
}

TEST(kvRollback, TruncateOnlyShrinks) {
  Harness h("f16", geometry(2, 2, 16, 16, 64));
  h.write_random(0, 12);
  EXPECT_TRUE(h.store->truncate(12).ok());
  EXPECT_EQ(h.store->size(), 12u);
  Status st = h.store->truncate(13);
  EXPECT_EQ(st.code(), Errc::out_of_range);
  EXPECT_EQ(st.message(), "kvstore device: truncate(13): only 12 slots are filled; truncate can only shrink");
  EXPECT_TRUE(h.store->truncate(0).ok());
  EXPECT_EQ(h.store->size(), 0u);
  const std::vector<float> one(16 * 2, 0.5f);
  EXPECT_FALSE(h.store->write(0, 1, 1, h.kview(one, 1), h.vview(one, 1)).ok());  // nothing left to append to
}

TEST(kvRollback, CompactChecksItsArguments) {
  Harness h("f32", geometry(1, 2, 16, 16, 64));
  h.write_random(0, 20);
  auto compact = [&](std::uint32_t dst, std::vector<std::uint32_t> src) { return h.store->compact(dst, src); };
  Status st = compact(10, {12, 11});
  EXPECT_EQ(st.code(), Errc::invalid_argument);
  EXPECT_EQ(st.message(), "kvstore device: compact: src must be strictly ascending, but src[0] = 12 and src[1] = 11");
  EXPECT_EQ(compact(10, {12, 12}).code(), Errc::invalid_argument);
  st = compact(10, {9, 12});
  EXPECT_EQ(st.code(), Errc::invalid_argument);
  EXPECT_EQ(st.message(), "kvstore device: compact: src[0] = 9 is below dst 10; slots can only move down");
  st = compact(10, {12, 20});
  EXPECT_EQ(st.code(), Errc::out_of_range);
  EXPECT_EQ(st.message(), "kvstore device: compact: src slot 20 is not filled (size 20)");
  EXPECT_EQ(compact(21, {}).code(), Errc::out_of_range);
  EXPECT_EQ(h.store->size(), 20u) << "a refused compact changes nothing";

  // Identity moves and an empty path: compact(dst, {}) is truncate(dst).
  EXPECT_TRUE(compact(10, {10, 11, 12}).ok());
  EXPECT_EQ(h.store->size(), 13u);
  EXPECT_TRUE(compact(5, {}).ok());
  EXPECT_EQ(h.store->size(), 5u);
}

// compact moves slots, not just the count: the moved slot's V comes back through attention.
TEST(kvRollback, CompactMovesTheData) {
  const KvGeometry g = geometry(1, 1, 4, 4, 16);
  Harness h("f32", g);
  std::vector<float> k(4 * 6, 0.0f), v(4 * 6);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i / 4);  // slot s has V = s
  h.write(0, 0, 6, k, v);
  const std::vector<std::uint32_t> src = {4};
  ASSERT_TRUE(h.store->compact(2, src).ok());
  ASSERT_EQ(h.store->size(), 3u);
  // Window 1 at n_past 2: the query at slot 2 sees only slot 2, which now holds slot 4's V.
  AttentionBatch b = batch(2, 1, nullptr, 1);
  const std::vector<float> q(4, 1.0f);
  EXPECT_EQ(h.attend(0, q, 1, b), std::vector<float>(4, 4.0f));
}
