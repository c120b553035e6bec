// The sysram store on the emulated device (emu_sysram_store.hpp; the rules in
// plugins/kvstores/sysram): what a GPU's offload must do, checked on a machine without one. Exact
// mode against the device store: the same attention (to float rounding) through writes that move
// the window, rollbacks below it and compactions across it; the same greedy tokens past the
// window, with and without speculation; its memory allocated once, as planned. Retrieval mode:
// a planted needle found that the window alone misses. The profile's errors, with where they are.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>

#include "emu_device.hpp"
#include "engine/pipeline.hpp"
#include "speculative/drafters.hpp"
#include "test_util.hpp"

using namespace graft;
namespace fs = std::filesystem;

namespace {

const fs::path kZoo = fs::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";

Profile emu_profile(const std::string& kv_toml) {
  auto parsed = Profile::parse("[model]\npath = \"" + kZoo.string() + "\"\n[backend]\nname = \"emu\"\nthreads = 1\n" +
                                   "[context]\nsize = 512\n" + kv_toml,
                               "emu.toml");
  EXPECT_TRUE(parsed) << parsed.status().message();
  Profile p = parsed ? *parsed : Profile::builtin();
  p.plugin_dirs.push_back(EMU_PLUGIN_DIR);
  return p;
}

const char* kSysram = "[kv]\nstore = \"sysram\"\ndevice_tokens = 256\nchunk = 64\n";

std::unique_ptr<Pipeline> build(const Profile& p, std::uint32_t batch = 32) {
  auto made = Pipeline::build(p, batch);
  EXPECT_TRUE(made) << made.status().message();
  return made ? std::move(*made) : nullptr;
}

// Pinned host memory the emulated device reads, filled with N(0, 1) floats.
struct Pinned {
  std::unique_ptr<Buffer> buf;
  float* data() const { return static_cast<float*>(buf->data()); }
};
Pinned pinned(Backend& be, std::size_t floats, std::mt19937* rng = nullptr) {
  auto b = be.allocate(floats * sizeof(float), MemoryKind::pinned_host);
  EXPECT_TRUE(b);
  Pinned p{std::move(*b)};
  std::normal_distribution<float> n(0.0f, 1.0f);
  for (std::size_t i = 0; i < floats; ++i) p.data()[i] = rng ? n(*rng) : 0.0f;
  return p;
}
TensorView pinned_view(const Pinned& p, std::int64_t a, std::int64_t b, std::int64_t c) {
  TensorView v = f32_view(p.data(), a, b, c);
  v.memory = MemoryKind::pinned_host;
  return v;
}

// One store of a pipeline's plugin on its emulated device, with its own inputs.
struct Side {
  std::unique_ptr<Pipeline> p;
  std::shared_ptr<KvStore> kv;
};

// The sysram store attends like the device store through every kind of call: writes in passes
// that move the window, attention at many lengths (causal batches and a token tree), a rollback
// below the window and the rewrite after it, compactions inside the window and across its start.
TEST(SysramStore, ExactModeAttendsAsTheDeviceStoreThroughWritesRollbacksAndCompactions) {
  const KvGeometry g{2, 2, 64, 64, 1024};
  Side dev{build(emu_profile("")), nullptr}, sys{build(emu_profile(kSysram)), nullptr};
  ASSERT_TRUE(dev.p && sys.p);
  for (Side* s : {&dev, &sys}) {
    auto kv = s->p->new_kv_store(g);
    ASSERT_TRUE(kv) << kv.status().message();
    s->kv = *kv;
  }
  std::mt19937 rng(5);
  const std::uint32_t n_heads = 4, pass = 50;
  // One set of inputs per side (each device's own pinned memory), the same numbers.
  auto fill = [&](std::size_t floats) {
    std::vector<float> v(floats);
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (float& x : v) x = n(rng);
    return v;
  };
  auto write = [&](std::uint32_t slot, std::uint32_t n) {
    const auto k = fill(std::size_t(n) * 2 * 64), v = fill(std::size_t(n) * 2 * 64);
    for (Side* s : {&dev, &sys}) {
      Pinned pk = pinned(s->p->backend(), k.size()), pv = pinned(s->p->backend(), v.size());
      std::copy(k.begin(), k.end(), pk.data());
      std::copy(v.begin(), v.end(), pv.data());
      for (std::uint32_t l = 0; l < g.n_layers; ++l)
        ASSERT_TRUE(s->kv->write(l, slot, n, pinned_view(pk, 64, 2, n), pinned_view(pv, 64, 2, n)).ok());
      ASSERT_TRUE(s->p->backend().synchronize().ok());
    }
  };
  double worst = 0;
  auto compare = [&](std::uint32_t n_past, std::uint32_t nq, const std::vector<std::uint8_t>* tree) {
    const auto q = fill(std::size_t(nq) * n_heads * 64);
    std::vector<float> got[2];
    int i = 0;
    for (Side* s : {&dev, &sys}) {
      Pinned pq = pinned(s->p->backend(), q.size()), po = pinned(s->p->backend(), q.size());
      std::copy(q.begin(), q.end(), pq.data());
      AttentionBatch b{nq, n_past, {}, 0.125f, 0};
      Pinned pm;
      if (tree) {
        auto m = s->p->backend().allocate(tree->size(), MemoryKind::pinned_host);
        ASSERT_TRUE(m);
        pm.buf = std::move(*m);
        std::memcpy(pm.buf->data(), tree->data(), tree->size());
        b.ancestor.data = pm.buf->data();
        b.ancestor.memory = MemoryKind::pinned_host;
        b.ancestor.type = type_id::i8;
        b.ancestor.n_dims = 2;
        b.ancestor.ne[0] = nq, b.ancestor.ne[1] = nq, b.ancestor.ne[2] = 1, b.ancestor.ne[3] = 1;
        b.ancestor.nb[0] = 1, b.ancestor.nb[1] = nq, b.ancestor.nb[2] = b.ancestor.nb[3] = std::size_t(nq) * nq;
      }
      for (std::uint32_t l = 0; l < g.n_layers; ++l) {
        ASSERT_TRUE(s->kv->attend(l, pinned_view(pq, 64, n_heads, nq), b, pinned_view(po, 64, n_heads, nq)).ok());
        ASSERT_TRUE(s->p->backend().synchronize().ok());
        got[i].insert(got[i].end(), po.data(), po.data() + q.size());
      }
      ++i;
    }
    for (std::size_t j = 0; j < got[0].size(); ++j) {
      worst = std::max(worst, double(std::fabs(got[0][j] - got[1][j])));
      ASSERT_NEAR(got[0][j], got[1][j], 1e-5) << "n_past " << n_past << " at " << j;
    }
  };
  std::uint32_t n = 0;
  for (; n + pass <= 700; n += pass) {
    write(n, pass);
    compare(n + pass - 4, 4, nullptr);  // the last 4 slots as the batch
  }
  ASSERT_EQ(sys.kv->size(), 700u);
  // A token tree at the end: node 0, its children 1 and 2, 3 under 2.
  const std::vector<std::uint8_t> tree = {1, 0, 0, 0, 1, 1, 0, 0, 1, 0, 1, 0, 1, 0, 1, 1};
  write(700, 4);
  compare(700, 4, &tree);
  // Accept nodes 0, 2, 3: a compaction inside the window.
  for (Side* s : {&dev, &sys}) ASSERT_TRUE(s->kv->compact(700, std::vector<std::uint32_t>{700, 702, 703}).ok());
  compare(699, 4 - 1, nullptr);
  // A rollback far below the window and new tokens after it.
  for (Side* s : {&dev, &sys}) ASSERT_TRUE(s->kv->truncate(200).ok());
  write(200, 40);
  compare(236, 4, nullptr);
  for (n = 240; n + pass <= 600; n += pass) write(n, pass);
  compare(n - 4, 4, nullptr);
  // A compaction whose destination is below the window: far slots brought down.
  for (Side* s : {&dev, &sys}) ASSERT_TRUE(s->kv->compact(100, std::vector<std::uint32_t>{300, 450, 579}).ok());
  compare(100, 3, nullptr);
  write(103, 30);
  compare(129, 4, nullptr);
  std::printf("largest difference from the device store: %.3g\n", worst);
}

// The greedy tokens of a prompt longer than the device window (and than window + chunk, so the
// window moves during the prompt and the generation) are the device store's, with and without
// speculation (token trees verified and compacted, the sequence rolled back); the last logits
// agree to float rounding.
TEST(SysramStore, GreedyTokensPastTheWindowAreTheDeviceStores) {
  std::ifstream in(fs::path(GRAFT_SOURCE_DIR) / "tests" / "fixtures" / "zoo-tokenizer-val.txt");
  std::stringstream text;
  text << in.rdbuf();
  for (const bool speculate : {false, true}) {
    SCOPED_TRACE(speculate ? "speculative" : "plain");
    std::vector<TokenId> ids[2];
    std::vector<float> logits[2];
    int i = 0;
    for (const char* kv : {"", kSysram}) {
      Profile prof = emu_profile(kv);
      if (speculate) {
        prof.speculative.enabled = true;
        prof.drafters = {PluginChoice{"ngram", {}, "", {}}, PluginChoice{"mtp", {}, "", {}}};
      }
      auto p = build(prof);
      ASSERT_TRUE(p);
      TokenizeOptions opt;
      opt.add_special = true;
      auto prompt = p->tokenizer().encode(text.str().substr(0, 1500), opt);
      ASSERT_TRUE(prompt);
      prompt->resize(std::min<std::size_t>(prompt->size(), 380));
      ASSERT_GT(prompt->size(), 330u) << "longer than the window and a chunk";
      auto session = p->new_session();
      ASSERT_TRUE(session);
      std::unique_ptr<Drafters> set;
      std::unique_ptr<SpeculativeDecoder> decoder;
      if (speculate) {
        auto s = Drafters::load(*p);
        ASSERT_TRUE(s) << s.status().message();
        set = std::move(*s);
        auto d = set->new_decoder();
        ASSERT_TRUE(d);
        decoder = std::move(*d);
      }
      GenerationOptions gen;
      gen.max_tokens = 64;
      gen.sampling.temperature = 0;
      GenerationStats stats;
      Status st = (*session)->generate(*prompt, gen, [&](TokenId t, std::string_view) { ids[i].push_back(t); return true; },
                                       stats, decoder.get());
      ASSERT_TRUE(st.ok()) << st.message();
      logits[i] = (*session)->logits();
      ++i;
    }
    EXPECT_EQ(ids[1], ids[0]);
    if (!speculate) {
      ASSERT_EQ(logits[0].size(), logits[1].size());
      double worst = 0, largest = 0;
      for (std::size_t j = 0; j < logits[0].size(); ++j) {
        worst = std::max(worst, double(std::fabs(logits[0][j] - logits[1][j])));
        largest = std::max(largest, double(std::fabs(logits[0][j])));
      }
      EXPECT_LE(worst, 1e-4 * largest) << "largest logit " << largest;
    }
  }
}

// A qwen35 hybrid (its attention layers' K/V in the store, the delta-net layers' state apart): the
// greedy tokens of a prompt past the window, with speculation (mtp and ngram), are the device
// store's.
TEST(SysramStore, AHybridsAttentionLayersPastTheWindowGiveTheDeviceStoresTokens) {
  TempDir dir;
  const fs::path model = dir.path() / "qwen35.gguf";
  auto made = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --nextn 1 --seed 7 --out " + model.string());
  ASSERT_EQ(made.exit_code, 0) << made.output;
  std::vector<TokenId> ids[2];
  int i = 0;
  for (const char* kv : {"", kSysram}) {
    Profile prof = emu_profile(kv);
    prof.model = model;
    prof.speculative.enabled = true;
    prof.drafters = {PluginChoice{"ngram", {}, "", {}}, PluginChoice{"mtp", {}, "", {}}};
    auto p = build(prof);
    ASSERT_TRUE(p);
    auto session = p->new_session();
    ASSERT_TRUE(session);
    auto set = Drafters::load(*p);
    ASSERT_TRUE(set) << set.status().message();
    auto decoder = (*set)->new_decoder();
    ASSERT_TRUE(decoder);
    std::vector<TokenId> prompt(360);
    for (std::size_t t = 0; t < prompt.size(); ++t) prompt[t] = static_cast<TokenId>(3 + (t * 7) % 250);
    GenerationOptions gen;
    gen.max_tokens = 48;
    gen.sampling.temperature = 0;
    GenerationStats stats;
    Status st = (*session)->generate(prompt, gen, [&](TokenId t, std::string_view) { ids[i].push_back(t); return true; },
                                     stats, decoder->get());
    ASSERT_TRUE(st.ok()) << st.message();
    ++i;
  }
  EXPECT_EQ(ids[1], ids[0]);
  EXPECT_EQ(ids[0].size(), 48u);
}

// Its memory is what the plan said, held from the session's start: generating hundreds of tokens
// past the window allocates nothing more (the host copy is made once per context).
TEST(SysramStore, MemoryIsAllocatedOncePerContextAsPlanned) {
  auto p = build(emu_profile(kSysram));
  ASSERT_TRUE(p);
  const MemoryPlan& plan = p->memory_plan();
  ASSERT_NE(plan.item("KV cache (system RAM)"), nullptr) << plan.table();
  auto session = p->new_session();
  ASSERT_TRUE(session);
  const KvMemory m = (*session)->kv().memory();
  EXPECT_EQ(plan.item("KV cache")->bytes, m.device_bytes) << plan.table();
  EXPECT_EQ(plan.item("KV cache (system RAM)")->bytes, m.host_bytes) << plan.table();
  EXPECT_EQ(m.host_bytes, 512ull * 4 * 2 * (2 * 64 * 2)) << "every slot of every layer: 4 layers, K and V, f16";
  auto* dev = static_cast<emu::Device*>(p->backend().native_stream());
  std::vector<TokenId> prompt(300);
  for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(5 + i % 200);
  GenerationOptions gen;
  gen.max_tokens = 16;
  gen.sampling.temperature = 0;
  GenerationStats stats;
  ASSERT_TRUE((*session)->generate(prompt, gen, [](TokenId, std::string_view) { return true; }, stats).ok());
  const std::int64_t held = dev->device_bytes();
  gen.max_tokens = 200;
  ASSERT_TRUE((*session)->generate(prompt, gen, [](TokenId, std::string_view) { return true; }, stats).ok());
  EXPECT_EQ(dev->device_bytes(), held) << "no allocation per step";
  EXPECT_GT((*session)->tokens().size(), 400u);
}

// A needle: one block far behind the window whose keys point along the query, with its own
// values, among blocks of random keys. Exact attention returns (about) the needle's values; the
// window alone misses it; the retrieval mode scores the block highest by its key bounds (Quest's
// bound: for random keys it is loose, so the needle must stand out of it), attends it, and
// matches exact.
TEST(SysramStore, RetrievalFindsANeedleTheWindowAloneMisses) {
  const KvGeometry g{1, 1, 64, 64, 4096};
  const std::uint32_t slots = 3000, needle = 1024;
  auto run = [&](const std::string& kv, std::uint32_t first) {
    auto p = build(emu_profile(kv));
    EXPECT_TRUE(p);
    auto store = p->new_kv_store(g);
    EXPECT_TRUE(store) << store.status().message();
    std::mt19937 rng(3);
    std::normal_distribution<float> n(0.0f, 1.0f);
    std::vector<float> dir(64);
    for (float& x : dir) x = n(rng);
    Backend& be = p->backend();
    Pinned k = pinned(be, std::size_t(slots) * 64), v = pinned(be, std::size_t(slots) * 64);
    for (std::uint32_t s = 0; s < slots; ++s)
      for (std::uint32_t d = 0; d < 64; ++d) {
        const bool in_needle = s >= needle && s < needle + 64;
        // Slots below `first` (the window alone) hold zero keys: attention spreads evenly over
        // them and the needle's block is never found.
        k.data()[s * 64 + d] = s < first ? 0.0f : (in_needle ? 1.5f * dir[d] : n(rng) * 0.3f);
        v.data()[s * 64 + d] = in_needle ? 5.0f : n(rng);
      }
    for (std::uint32_t s = 0; s < slots; s += 50) {
      const std::uint32_t m = std::min(50u, slots - s);
      TensorView kv_k = pinned_view(k, 64, 1, m), kv_v = pinned_view(v, 64, 1, m);
      kv_k.data = k.data() + std::size_t(s) * 64;
      kv_v.data = v.data() + std::size_t(s) * 64;
      EXPECT_TRUE((*store)->write(0, s, m, kv_k, kv_v).ok());
    }
    Pinned q = pinned(be, 64), o = pinned(be, 64);
    for (std::uint32_t d = 0; d < 64; ++d) q.data()[d] = dir[d];
    const AttentionBatch b{1, slots - 1, {}, 1.0f, 0};
    EXPECT_TRUE((*store)->attend(0, pinned_view(q, 64, 1, 1), b, pinned_view(o, 64, 1, 1)).ok());
    EXPECT_TRUE(be.synchronize().ok());
    double mean = 0;
    for (std::uint32_t d = 0; d < 64; ++d) mean += o.data()[d] / 64.0;
    return mean;
  };
  const double exact = run(kSysram, 0);
  const double retrieval =
      run("[kv]\nstore = \"sysram\"\nmode = \"retrieval-lossy\"\ndevice_tokens = 256\nchunk = 64\nhost_budget = "
          "\"64MiB\"\nsink = 4\nblock = 64\ntop_blocks = 2\n",
          0);
  EXPECT_GT(exact, 4.0) << "the needle dominates exact attention";
  EXPECT_NEAR(retrieval, exact, 0.05 * exact) << "retrieval attends the needle's block";
  // The window alone: the same keys with the older ones never attended (retrieval that keeps only
  // the window's slots is this store with a context that starts at its window).
  const double window_alone = run(kSysram, slots - 300);
  EXPECT_LT(window_alone, 1.0) << "the window alone does not see the needle";
}

// The profile's mistakes, each one line with where it is: sysram on the CPU (one memory), the
// retrieval mode without its budget, a budget below the window, a size that is not one, a K/V type
// without kernels on the device (the quant store).
TEST(SysramStore, BadProfilesSayWhereAndWhy) {
  struct Case {
    std::string toml;
    bool emu;
    std::string want;
  };
  const std::vector<Case> cases = {
      {"[kv]\nstore = \"sysram\"\n", false,
       "emu.toml:8:1: kvstore sysram: backend 'cpu' computes in system RAM, where its KV cache already is: there is no "
       "device memory to offload from (use store = \"device\" or \"quant\")"},
      {"[kv]\nstore = \"sysram\"\nmode = \"retrieval-lossy\"\n", true,
       "emu.toml:10:1: kvstore plugin 'sysram' ("},
      {"[kv]\nstore = \"sysram\"\nhost_budget = \"1MiB\"\n", true,
       "emu.toml:10:1: kvstore sysram: host_budget = 1.0 MiB is below the device window's 8.0 MiB (device_tokens 4096 "
       "x 2048 bytes per token): system RAM keeps every token, the window's too"},
      {"[kv]\nstore = \"sysram\"\nhost_budget = \"lots\"\n", true,
       "emu.toml:10:1: kv store 'sysram': host_budget: 'lots' is not a size"},
      {"[kv]\nstore = \"quant\"\ntype_k = \"q8_0\"\n", true,
       "emu.toml:8:1: kvstore quant: not implemented on emu (quantized K/V run on the cpu backend; on a GPU use the "
       "device store)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.toml);
    Profile p = emu_profile(c.toml);
    if (!c.emu) {
      p.backend.name = "cpu";
      p.plugin_dirs.clear();
    }
    auto made = Pipeline::build(p, 32);
    ASSERT_FALSE(made);
    EXPECT_EQ(made.status().message().rfind(c.want, 0), 0u) << made.status().message();
    if (c.toml.find("retrieval") != std::string::npos)
      EXPECT_NE(made.status().message().find("): mode = \"retrieval-lossy\" needs host_budget (the system RAM one "
                                             "sequence's K/V may take, e.g. \"32GiB\"): the retrieval mode's memory "
                                             "is bounded"),
                std::string::npos)
          << made.status().message();
  }
}

}  // namespace
