// The quant store: K and V in their own types (f16, f32, q8_0, q4_0). Attention against a double
// reference over the unquantized K/V at real shapes, within a named bound per type; every SIMD
// level and thread count the same bits; memory accounting; its refusals. Rollback and tree
// compaction run in rollback_test.cpp with the device store's tests.
#include <cstring>

#include "cache_rows.hpp"
#include "kv_test_util.hpp"

using namespace kvtest;

namespace {

// The worst |out - reference| over the outputs, as a fraction of the largest |v| (K's rounding moves
// the softmax weights, V's the values they average), on uniform K/V in [-1, 1]. Measured worst
// cases over the 1K-4K shapes below (head_dim 64-256, 1-16 queries): f16/f16 1.4e-5, q8_0/q8_0
// 2.9e-4 (2.8e-4 before a q8_0 K's scores rounded the query to q8_0), f16/q8_0 2.7e-4, q8_0/q4_0
// 4.3e-3, q4_0/q4_0 4.6e-3, q8_0/tq3 1.2e-2, tq3/tq3 1.3e-2, tq3/f16 2.2e-3; each bound about 2.5x
// that (the 32K shape stays inside them too). tq3 runs through the rotation: queries rotated,
// outputs un-rotated, as the store does.
struct TypeBound {
  const char* types;
  double bound;
};
constexpr TypeBound kBounds[] = {
    {"f16/f16", 4e-5},    {"q8_0/q8_0", 7e-4}, {"q8_0/q4_0", 1.1e-2}, {"q4_0/q4_0", 1.2e-2},
    {"f16/q8_0", 7e-4},   {"q8_0/tq3", 3e-2},  {"tq3/tq3", 3.2e-2},   {"tq3/f16", 5.5e-3},
};

struct Shape {
  std::uint32_t head_dim, n_heads, n_kv_heads, n_past, n_query;
};

TEST(kvQuantStore, AttentionStaysWithinEachTypesBoundOfTheExactResult) {
  const Shape shapes[] = {{128, 16, 8, 1024, 1}, {128, 16, 8, 1024, 16}, {64, 8, 2, 4096, 1},
                          {256, 8, 4, 1024, 4}, {128, 32, 8, 4096, 16}, {128, 8, 2, 32768, 1}};
  for (const Shape& sh : shapes)
    for (const TypeBound& tb : kBounds) {
      SCOPED_TRACE(std::string(tb.types) + " head_dim " + std::to_string(sh.head_dim) + " past " +
                   std::to_string(sh.n_past) + " queries " + std::to_string(sh.n_query));
      const KvGeometry g = geometry(1, sh.n_kv_heads, sh.head_dim, sh.head_dim, sh.n_past + sh.n_query);
      Harness h(tb.types, g, 2, sh.head_dim + sh.n_past);
      h.write_random(0, sh.n_past + sh.n_query, 1.0f);
      std::mt19937 rng(sh.n_query);
      // Queries like a model's: scores spread over a few units, so the softmax is neither flat nor one-hot.
      const auto q = uniform(rng, static_cast<std::size_t>(sh.head_dim) * sh.n_heads * sh.n_query, 0.5f);
      AttentionBatch b;
      b.n_past = sh.n_past;
      b.n_query = sh.n_query;
      b.scale = 1.0f / std::sqrt(static_cast<float>(sh.head_dim));
      const auto got = h.attend(0, q, sh.n_heads, b);
      const auto want = reference_attention(h.layers[0], g, q, sh.n_heads, sh.n_past, sh.n_query, nullptr,
                                            causal_positions(sh.n_past, sh.n_query), b.scale, 0);
      const double err = max_abs_diff(got, want) / max_abs(h.layers[0].v);
      EXPECT_LE(err, tb.bound);
      EXPECT_GT(err, 0.0) << "a quantized cache cannot be exact on random data";
    }
}

// A head-major layer cache of one type from token-major rows [slot][kv head][dim].
std::vector<std::uint8_t> encode(const std::vector<float>& rows, kv::CacheType type, std::uint32_t heads,
                                 std::uint32_t dim, std::uint32_t slots) {
  const std::size_t row_bytes = kv::cache_row_bytes(type, dim);
  std::vector<std::uint8_t> out(row_bytes * heads * slots);
  for (std::uint32_t s = 0; s < slots; ++s)
    for (std::uint32_t h = 0; h < heads; ++h) {
      const float* src = rows.data() + (static_cast<std::size_t>(s) * heads + h) * dim;
      void* dst = out.data() + (static_cast<std::size_t>(h) * slots + s) * row_bytes;
      kv::encode_row(type, src, dim, dst);
    }
  return out;
}

// Every level gives the same bits on quantized caches (the vector levels decode a chunk of blocks
// with their own instructions, the portable kernel with plain code) for 1-3 threads: a tree of
// queries with and without a window, and a decode step.
TEST(kvQuantStore, EveryLevelAndThreadCountGivesTheSameBits) {
  constexpr std::uint32_t dim = 128, heads = 8, kv_heads = 2, past = 300, n_query = 9;
  std::mt19937 rng(4);
  const auto k = uniform(rng, std::size_t{past + n_query} * kv_heads * dim, 1.0f);
  const auto v = uniform(rng, std::size_t{past + n_query} * kv_heads * dim, 1.0f);
  auto q = uniform(rng, std::size_t{n_query} * heads * dim, 1.0f);
  const Tree tree = random_tree(rng, n_query);
  for (auto [kt, vt] : {std::pair{kv::CacheType::q8_0, kv::CacheType::q4_0},
                        std::pair{kv::CacheType::q4_0, kv::CacheType::q8_0},
                        std::pair{kv::CacheType::tq3, kv::CacheType::tq3},
                        std::pair{kv::CacheType::q8_0, kv::CacheType::tq3}}) {
    const auto ck = encode(k, kt, kv_heads, dim, past + n_query), cv = encode(v, vt, kv_heads, dim, past + n_query);
    kv::LayerCache c;
    c.k = ck.data();
    c.v = cv.data();
    c.k_type = kt;
    c.v_type = vt;
    c.n_kv_heads = kv_heads;
    c.head_dim_k = c.head_dim_v = dim;
    c.capacity = past + n_query;
    for (std::uint32_t window : {0u, 40u, 1000u}) {
      // A tree of 9 queries (verification), or one query (decode: window 1000 runs it).
      const bool decode = window == 1000;
      AttentionBatch b;
      b.n_past = past;
      b.n_query = decode ? 1 : n_query;
      b.ancestor = decode ? TensorView{} : mask_view(tree.ancestor.data(), n_query);
      b.scale = 0.09f;
      b.sliding_window = window;
      std::vector<float> first;
      for (auto level : {kv::AttnSimd::scalar, kv::AttnSimd::avx2, kv::AttnSimd::avx512}) {
        if (!kv::cpu_supports(level)) continue;
        for (std::int64_t threads : {1, 2, 3}) {
          auto backend = cpu_backend(threads);
          std::vector<float> out(std::size_t{b.n_query} * heads * dim, NAN);
          ASSERT_TRUE(kv::attend(*backend, c, f32_view(q.data(), dim, heads, b.n_query), b,
                                 f32_view(out.data(), dim, heads, b.n_query), level)
                          .ok());
          if (first.empty()) first = out;
          EXPECT_EQ(std::memcmp(out.data(), first.data(), out.size() * sizeof(float)), 0)
              << simd_level_name(level) << " " << threads << " threads, window " << window;
        }
      }
    }
  }
}

// Per token: layers * kv_heads * (K row + V row), q8_0 34, q4_0 18 and tq3 14 bytes per 32 elements;
// the store allocates capacity times that; only f32/f32 is lossless.
TEST(kvQuantStore, MemoryAccountingByType) {
  const KvGeometry g = geometry(4, 8, 128, 64, 100);
  struct Want {
    const char* types;
    std::uint64_t per_token;
    bool lossless;
  };
  for (const Want& w : {Want{"q8_0/q8_0", 4 * 8 * (4 * 34 + 2 * 34), false},
                        Want{"q8_0/q4_0", 4 * 8 * (4 * 34 + 2 * 18), false},
                        Want{"q4_0/f16", 4 * 8 * (4 * 18 + 64 * 2), false}, Want{"f32/f32", 4 * 8 * 192 * 4, true},
                        Want{"q8_0/tq3", 4 * 8 * (4 * 34 + 2 * 14), false}, Want{"tq3/tq3", 4 * 8 * (4 * 14 + 2 * 14), false},
                        Want{"f16/f16", 4 * 8 * 192 * 2, false}}) {
    SCOPED_TRACE(w.types);
    auto f = kv_factory(w.types);
    ASSERT_TRUE(f) << f.status().message();
    EXPECT_EQ((*f)->bytes_per_token(g), w.per_token);
    auto backend = cpu_backend(1);
    auto s = (*f)->create(*backend, g);
    ASSERT_TRUE(s) << s.status().message();
    EXPECT_EQ((*s)->memory().device_bytes, 100 * w.per_token);
    EXPECT_EQ((*s)->lossless(), w.lossless);
  }
}

TEST(kvQuantStore, RefusalsNameTheKeyTheTypeAndTheStore) {
  const auto keys = quant_library()->config_keys();
  ASSERT_EQ(keys.size(), 2u);
  EXPECT_STREQ(keys[0].key, "type_k");
  EXPECT_STREQ(keys[1].key, "type_v");
  auto unknown = kv_factory("q8_0/q5_1");
  ASSERT_FALSE(unknown);
  const std::string said = unknown.status().message(),
                    want = ": type_v = \"q5_1\" is not supported; valid types: f16, f32, q8_0, q4_0, tq3";
  EXPECT_EQ(said.rfind("kvstore plugin 'quant' (", 0), 0u) << said;
  EXPECT_EQ(said.substr(said.size() - std::min(said.size(), want.size())), want) << said;
  // A row that is not whole blocks.
  auto f = kv_factory("q8_0/f16");
  ASSERT_TRUE(f);
  auto backend = cpu_backend(1);
  auto odd = (*f)->create(*backend, geometry(1, 2, 80, 80, 16));
  ASSERT_FALSE(odd);
  EXPECT_EQ(odd.status().message(),
            "kvstore quant: head_dim_k = 80 is not a multiple of 32, which a q8_0 cache needs (one block is 32 "
            "elements)");
  // A rotated row must be a power of two (a Walsh-Hadamard transform), whole blocks or not.
  auto rot = kv_factory("q8_0/tq3");
  ASSERT_TRUE(rot);
  auto odd_rot = (*rot)->create(*backend, geometry(1, 2, 96, 96, 16));
  ASSERT_FALSE(odd_rot);
  EXPECT_EQ(odd_rot.status().message(),
            "kvstore quant: head_dim_v = 96 is not a power of two up to 1024, which a tq3 cache needs (its rows are "
            "rotated by a Walsh-Hadamard transform)");
  // The store's shared checks speak with its own name.
  Harness h("q8_0/q4_0", geometry(1, 2, 64, 64, 8));
  std::vector<float> k(64 * 2 * 9), v(64 * 2 * 9);
  const Status full = h.store->write(0, 0, 9, h.kview(k, 9), h.vview(v, 9));
  EXPECT_EQ(full.message().rfind("kvstore quant: ", 0), 0u) << full.message();
  EXPECT_EQ(h.store->truncate(1).message().rfind("kvstore quant: ", 0), 0u);
}

}  // namespace
