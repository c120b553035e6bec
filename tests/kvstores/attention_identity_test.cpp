// Every SIMD level of the device store's attention against a plain implementation of the
// documented operation order, compared bit for bit: random head sizes, GQA ratios, contexts,
// batch sizes, masks, windows, f16 and f32 caches, token-major and head-major, and special values
// (signed zeros, subnormals, overflowing scores).
#include <algorithm>
#include <cmath>
#include <cstring>

#include "attention.hpp"
#include "softmax_exp.hpp"
#include "kv_test_util.hpp"

using namespace kvtest;

namespace {

// One attend() call's inputs, with K/V as the cache holds them and as f32 for the reference.
struct Input {
  kv::CacheType type = kv::CacheType::f16;
  std::uint32_t n_kv = 1, n_heads = 1, dk = 64, dv = 64, n_past = 0, n_query = 1, window = 0;
  float scale = 0.125f;
  std::vector<std::uint8_t> mask;         // empty: causal
  std::vector<float> q, k, v;             // q [query][head][dk]; k/v [slot][kv head][d], values as cached
  std::vector<std::uint16_t> k16, v16;    // the f16 cache
};

// The documented order (docs/kvstores.md), one output row at a time, in plain float, with the
// documented exponential (softmax_exp.hpp).
float score(const float* q, const float* k, std::uint32_t d, float scale) {
  float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  std::uint32_t i = 0;
  for (; i + 8 <= d; i += 8)
    for (int l = 0; l < 8; ++l) a[l] = std::fma(q[i + l], k[i + l], a[l]);
  float tail = 0.0f;
  for (; i < d; ++i) tail = std::fma(q[i], k[i], tail);
  const float fold = ((a[0] + a[4]) + (a[1] + a[5])) + ((a[2] + a[6]) + (a[3] + a[7]));
  return (fold + tail) * scale;
}

std::vector<float> reference(const Input& in) {
  const std::uint32_t n_rep = in.n_heads / in.n_kv, nq = in.n_query;
  auto sees = [&](std::uint32_t i, std::uint32_t j) { return in.mask.empty() ? j <= i : in.mask[i * nq + j] != 0; };
  std::vector<std::int64_t> pos(nq);
  for (std::uint32_t i = 0; i < nq; ++i) {
    std::int64_t depth = 0;
    for (std::uint32_t j = 0; j < nq; ++j) depth += (j != i && sees(i, j));
    pos[i] = in.n_past + depth;
  }
  auto in_window = [&](std::int64_t qpos, std::int64_t kpos) { return in.window == 0 || qpos - kpos < in.window; };
  std::vector<float> out(static_cast<std::size_t>(nq) * in.n_heads * in.dv);
  for (std::uint32_t i = 0; i < nq; ++i) {
    std::vector<std::uint32_t> slots;  // visible, ascending: committed, then batch entries
    for (std::uint32_t s = 0; s < in.n_past; ++s)
      if (in_window(pos[i], s)) slots.push_back(s);
    for (std::uint32_t j = 0; j < nq; ++j)
      if (sees(i, j) && in_window(pos[i], pos[j])) slots.push_back(in.n_past + j);
    for (std::uint32_t h = 0; h < in.n_heads; ++h) {
      const std::uint32_t g = h / n_rep;
      float* o = &out[(static_cast<std::size_t>(i) * in.n_heads + h) * in.dv];
      if (slots.empty()) {
        std::fill_n(o, in.dv, 0.0f);
        continue;
      }
      const float* qr = &in.q[(static_cast<std::size_t>(i) * in.n_heads + h) * in.dk];
      std::vector<float> p(slots.size());
      for (std::size_t t = 0; t < slots.size(); ++t)
        p[t] = score(qr, &in.k[(static_cast<std::size_t>(slots[t]) * in.n_kv + g) * in.dk], in.dk, in.scale);
      float m = -INFINITY;
      for (float x : p) m = std::max(m, x);
      float sum = 0.0f;
      for (float& x : p) {
        x = kv::softmax_exp(x - m);
        sum = sum + x;
      }
      const float inv = 1.0f / sum;
      std::vector<float> acc(in.dv, 0.0f);
      for (std::size_t t = 0; t < slots.size(); ++t) {
        const float* vr = &in.v[(static_cast<std::size_t>(slots[t]) * in.n_kv + g) * in.dv];
        for (std::uint32_t d = 0; d < in.dv; ++d) acc[d] = std::fma(p[t], vr[d], acc[d]);
      }
      for (std::uint32_t d = 0; d < in.dv; ++d) o[d] = acc[d] * inv;
    }
  }
  return out;
}

// Uniform values with a sprinkling of signed zeros, f16 subnormals and the largest f16.
std::vector<float> values(std::mt19937& rng, std::size_t n, float amplitude) {
  std::uniform_real_distribution<float> u(-amplitude, amplitude);
  std::uniform_int_distribution<int> pick(0, 99);
  const float special[] = {0.0f, -0.0f, 0x1p-24f, -0x1p-20f, 65504.0f, -65504.0f};
  std::vector<float> x(n);
  for (auto& e : x) e = pick(rng) < 2 ? special[pick(rng) % 6] : u(rng);
  return x;
}

// Random q/K/V for the shape and batch already set in `in`.
void fill(std::mt19937& rng, Input& in) {
  const std::size_t slots = static_cast<std::size_t>(in.n_past) + in.n_query;
  in.q = values(rng, static_cast<std::size_t>(in.n_query) * in.n_heads * in.dk, 4.0f);
  in.k = values(rng, slots * in.n_kv * in.dk, 1.0f);
  in.v = values(rng, slots * in.n_kv * in.dv, 1.0f);
  if (in.type != kv::CacheType::f16) return;
  for (auto [x, bits] : {std::pair{&in.k, &in.k16}, std::pair{&in.v, &in.v16}}) {
    bits->resize(x->size());
    for (std::size_t i = 0; i < x->size(); ++i) {
      (*bits)[i] = graft::f32_to_f16((*x)[i]);
      (*x)[i] = graft::f16_to_f32((*bits)[i]);
    }
  }
}

Input shaped(kv::CacheType type, std::uint32_t dk, std::uint32_t dv, std::uint32_t n_kv, std::uint32_t n_rep) {
  Input in;
  in.type = type;
  in.dk = dk;
  in.dv = dv;
  in.n_kv = n_kv;
  in.n_heads = n_kv * n_rep;
  in.scale = 1.0f / std::sqrt(static_cast<float>(dk));
  return in;
}

Input random_input(std::mt19937& rng, kv::CacheType type, std::uint32_t dk, std::uint32_t dv, std::uint32_t n_kv,
                   std::uint32_t n_rep) {
  auto uni = [&](std::uint32_t lo, std::uint32_t hi) { return std::uniform_int_distribution<std::uint32_t>(lo, hi)(rng); };
  Input in = shaped(type, dk, dv, n_kv, n_rep);
  in.n_past = uni(0, 4) == 0 ? uni(0, 3) : uni(0, 600);
  in.n_query = uni(0, 2) == 0 ? 1 : uni(1, 40);
  const std::uint32_t masking = uni(0, 3);  // causal, causal, token tree, arbitrary mask
  if (masking == 2) {
    in.mask = random_tree(rng, in.n_query).ancestor;
  } else if (masking == 3) {
    in.mask.resize(static_cast<std::size_t>(in.n_query) * in.n_query);
    for (auto& m : in.mask) m = uni(0, 2) == 0;
  }
  in.window = uni(0, 2) == 0 ? uni(1, in.n_past + in.n_query + 2) : 0;
  if (uni(0, 5) == 0) in.scale = -in.scale;
  fill(rng, in);
  return in;
}

// [slot][kv head][d] (as Input holds it) into [kv head][capacity][d], capacity >= the slots.
template <class T>
std::vector<T> head_major(const std::vector<T>& token_major, std::uint32_t heads, std::uint32_t d, std::uint32_t capacity) {
  const std::size_t slots = token_major.size() / (static_cast<std::size_t>(heads) * d);
  std::vector<T> out(static_cast<std::size_t>(heads) * capacity * d, T{});
  for (std::size_t s = 0; s < slots; ++s)
    for (std::size_t h = 0; h < heads; ++h)
      std::copy_n(token_major.data() + (s * heads + h) * d, d, out.data() + (h * capacity + s) * d);
  return out;
}

// The cache token-major as Input holds it, or head-major (the store's layout) with 3 spare slots
// per head, so a head's rows do not end where the next head's begin.
std::vector<float> run(Backend& backend, const Input& in, kv::AttnSimd level, bool head = false) {
  kv::LayerCache c;
  const bool f16 = in.type == kv::CacheType::f16;
  const std::uint32_t capacity = in.n_past + in.n_query + 3;
  std::vector<float> hk, hv;
  std::vector<std::uint16_t> hk16, hv16;
  if (head) {
    c.capacity = capacity;
    if (f16) hk16 = head_major(in.k16, in.n_kv, in.dk, capacity), hv16 = head_major(in.v16, in.n_kv, in.dv, capacity);
    else hk = head_major(in.k, in.n_kv, in.dk, capacity), hv = head_major(in.v, in.n_kv, in.dv, capacity);
  }
  c.k = f16 ? static_cast<const void*>(head ? hk16.data() : in.k16.data()) : (head ? hk.data() : in.k.data());
  c.v = f16 ? static_cast<const void*>(head ? hv16.data() : in.v16.data()) : (head ? hv.data() : in.v.data());
  c.k_type = c.v_type = in.type;
  c.n_kv_heads = in.n_kv;
  c.head_dim_k = in.dk;
  c.head_dim_v = in.dv;
  AttentionBatch b;
  b.n_query = in.n_query;
  b.n_past = in.n_past;
  b.ancestor = mask_view(in.mask.empty() ? nullptr : in.mask.data(), in.n_query);
  b.scale = in.scale;
  b.sliding_window = in.window;
  std::vector<float> out(static_cast<std::size_t>(in.dv) * in.n_heads * in.n_query, NAN);
  const Status st =
      kv::attend(backend, c, f32_view(const_cast<float*>(in.q.data()), in.dk, in.n_heads, in.n_query), b,
                 f32_view(out.data(), in.dv, in.n_heads, in.n_query), level);
  EXPECT_TRUE(st.ok()) << st.message();
  return out;
}

// Equal bits, or both NaN: NaN payloads are not pinned by either side (the compiler may swap the
// operands of a commutative add, and x86 returns the first operand's NaN).
::testing::AssertionResult same_bits(const std::vector<float>& got, const std::vector<float>& want) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "size " << got.size() << " vs " << want.size();
  for (std::size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) && std::isnan(want[i])) continue;
    if (std::memcmp(&got[i], &want[i], sizeof(float)) != 0)
      return ::testing::AssertionFailure() << "element " << i << ": " << got[i] << " vs " << want[i] << " (bits "
                                           << std::bit_cast<std::uint32_t>(got[i]) << " vs "
                                           << std::bit_cast<std::uint32_t>(want[i]) << ")";
  }
  return ::testing::AssertionSuccess();
}

std::vector<kv::AttnSimd> levels() {
  std::vector<kv::AttnSimd> l;
  for (auto level : {kv::AttnSimd::scalar, kv::AttnSimd::avx2, kv::AttnSimd::avx512})
    if (kv::cpu_supports(level)) l.push_back(level);
  return l;
}

std::string describe(const Input& in) {
  return std::string(in.type == kv::CacheType::f16 ? "f16" : "f32") + " dk " + std::to_string(in.dk) + " dv " +
         std::to_string(in.dv) + " kv heads " + std::to_string(in.n_kv) + " heads " + std::to_string(in.n_heads) +
         " n_past " + std::to_string(in.n_past) + " n_query " + std::to_string(in.n_query) + " window " +
         std::to_string(in.window) + (in.mask.empty() ? " causal" : " masked") + " scale " + std::to_string(in.scale);
}

void expect_levels_match_reference(const Input& in, std::int64_t threads) {
  SCOPED_TRACE(describe(in) + " threads " + std::to_string(threads));
  const auto want = reference(in);
  auto backend = cpu_backend(threads);
  for (auto level : levels())
    for (bool head : {false, true})
      EXPECT_TRUE(same_bits(run(*backend, in, level, head), want))
          << graft::simd_level_name(level) << (head ? " head-major" : " token-major");
}

struct Shape {
  std::uint32_t dk, dv, n_kv, n_rep;
};

}  // namespace

// bench-250m (64, 8 KV heads, 2 per group), Llama-style 128, and sizes that take the tiles'
// partial registers (80, 48, 40, 8) or the portable kernel (3, 5, 12: not multiples of 8).
TEST(kvAttentionIdentity, EveryLevelMatchesTheDocumentedOrderBitForBit) {
  const Shape shapes[] = {{64, 64, 8, 2}, {128, 128, 2, 4}, {64, 64, 2, 1}, {80, 48, 1, 3}, {96, 96, 3, 2},
                          {8, 40, 2, 8},  {256, 256, 1, 2}, {3, 5, 2, 3},   {12, 16, 1, 5}, {128, 64, 4, 1}};
  std::mt19937 rng(2024);
  int cases = 0;
  for (int round = 0; round < 4; ++round)
    for (const Shape& s : shapes)
      for (auto type : {kv::CacheType::f16, kv::CacheType::f32}) {
        const Input in = random_input(rng, type, s.dk, s.dv, s.n_kv, s.n_rep);
        expect_levels_match_reference(in, 1 + (cases % 3));
        ++cases;
      }
  EXPECT_EQ(cases, 80);
  EXPECT_GE(levels().size(), 1u);
}

// Decode at the benchmark shape, every context length around the kernels' batch and chunk edges
// (16 slots per score batch, 64 per chunk).
TEST(kvAttentionIdentity, DecodeAtEveryContextAroundBatchEdges) {
  std::mt19937 rng(7);
  for (auto type : {kv::CacheType::f16, kv::CacheType::f32})
    for (std::uint32_t n_past : {0u, 1u, 7u, 15u, 16u, 17u, 63u, 64u, 65u, 127u, 128u, 129u, 255u, 600u}) {
      Input in = shaped(type, 64, 64, 8, 2);
      in.n_past = n_past;
      fill(rng, in);
      expect_levels_match_reference(in, 2);
    }
}

// Scores that overflow to +-inf (and inf - inf = NaN) go through the softmax the same way.
TEST(kvAttentionIdentity, OverflowingScoresGiveTheSameResult) {
  std::mt19937 rng(99);
  for (auto type : {kv::CacheType::f16, kv::CacheType::f32}) {
    Input in = random_input(rng, type, 64, 64, 2, 2);
    for (std::size_t i = 0; i < in.q.size(); i += 5) in.q[i] = (i % 2 ? 1e36f : -1e36f);
    const auto want = reference(in);
    std::size_t special = 0;
    for (float x : want) special += !std::isfinite(x);
    EXPECT_GT(special, 0u) << "the case must really overflow";
    expect_levels_match_reference(in, 2);
  }
}

// The plugin itself (its default level) gives the reference's bits through the store API.
TEST(kvAttentionIdentity, StoreMatchesTheReference) {
  for (const char* type : {"f16", "f32"}) {
    SCOPED_TRACE(type);
    constexpr std::uint32_t past = 300, nq = 9, heads = 16, kvh = 8, d = 64;
    Harness h(type, geometry(1, kvh, d, d, 512), 2, 5);
    h.write_random(0, past + nq);
    const Tree t = random_tree(h.rng, nq);
    Input in;
    in.type = std::string(type) == "f16" ? kv::CacheType::f16 : kv::CacheType::f32;
    in.n_kv = kvh;
    in.n_heads = heads;
    in.dk = in.dv = d;
    in.n_past = past;
    in.n_query = nq;
    in.mask = t.ancestor;
    in.q = uniform(h.rng, static_cast<std::size_t>(d) * heads * nq, 4.0f);
    in.k = in.type == kv::CacheType::f16 ? round_f16(h.layers[0].k) : h.layers[0].k;
    in.v = in.type == kv::CacheType::f16 ? round_f16(h.layers[0].v) : h.layers[0].v;
    AttentionBatch b;
    b.n_query = nq;
    b.n_past = past;
    b.ancestor = mask_view(t.ancestor.data(), nq);
    b.scale = in.scale;
    EXPECT_TRUE(same_bits(h.attend(0, in.q, heads, b), reference(in)));
  }
}

TEST(kvAttentionIdentity, LevelNamesAndErrors) {
  EXPECT_EQ(*kv::parse_attn_simd("scalar"), kv::AttnSimd::scalar);
  EXPECT_EQ(*kv::parse_attn_simd(""), kv::best_attn_simd());
  EXPECT_EQ(*kv::parse_attn_simd("auto"), kv::best_attn_simd());
  if (kv::cpu_supports(kv::AttnSimd::avx512)) {
    EXPECT_EQ(*kv::parse_attn_simd("amx"), kv::AttnSimd::avx512);  // the formats' AMX level
  }
  auto bad = kv::parse_attn_simd("avx3");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.status().message(), "kvstore device: GRAFT_CPU_SIMD = \"avx3\": expected auto, amx, avx512, avx2 or scalar");
  for (auto level : {kv::AttnSimd::avx2, kv::AttnSimd::avx512}) {
    auto r = kv::parse_attn_simd(graft::simd_level_name(level));
    if (kv::cpu_supports(level)) {
      EXPECT_EQ(*r, level);
    } else {
      ASSERT_FALSE(r);
      EXPECT_EQ(r.status().message(), std::string("kvstore device: GRAFT_CPU_SIMD = \"") + graft::simd_level_name(level) +
                                          "\": this CPU does not support it");
    }
  }
}
