// The host side of a GPU backend, on the emulated device (emu_device.hpp): the same forward passes,
// token trees and speculative rounds as on the CPU, with weights uploaded, index arrays staged,
// device memory the host cannot read and a stream that runs only when waited for. Equal bits
// to the CPU's, since the emulator computes with the CPU's kernels: any difference is the host
// reading or writing something at the wrong time or in the wrong place.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>

#include "engine/pipeline.hpp"
#include "speculative/zoo_test_util.hpp"
#include "test_util.hpp"

using namespace graft;
namespace fs = std::filesystem;

namespace {

constexpr std::uint32_t kVocab = 600;
const fs::path kEmuPlugins = EMU_PLUGIN_DIR;
const fs::path kRoot = GRAFT_SOURCE_DIR;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<TokenId> tokens_of(std::size_t n, std::uint32_t salt) {
  std::vector<TokenId> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<TokenId>((i * 7919 + salt * 104729 + 13) % kVocab);
  return t;
}

Profile profile_for(const fs::path& model, const std::string& backend, const std::string& kv_type) {
  Profile p = Profile::builtin();
  p.model = model;
  p.context = 256;
  p.threads = 1;  // ctest runs two tests at once on two cores
  p.kv.config.set("type", kv_type);
  p.backend.name = backend;
  if (backend == "emu") p.plugin_dirs.push_back(kEmuPlugins);
  p.plugin_dirs.push_back(SCRIPT_PLUGIN_DIR);  // tests/speculative's script drafter
  return p;
}

std::unique_ptr<Pipeline> build(const fs::path& model, const std::string& backend, const std::string& kv_type,
                                std::uint32_t context = 256) {
  Profile profile = profile_for(model, backend, kv_type);
  profile.context = context;
  auto p = Pipeline::build(profile, 64);
  EXPECT_TRUE(p) << backend << ": " << p.status().message();
  return p ? std::move(*p) : nullptr;
}

// What a run gives back, in order: the logits after a prompt, after each decode step, for every
// row of a token tree, after its path is compacted, and the hidden-state taps of a pass.
std::vector<std::vector<float>> trace(Pipeline& p) {
  std::vector<std::vector<float>> out;
  auto made = p.new_session();
  EXPECT_TRUE(made) << made.status().message();
  if (!made) return out;
  Session& s = **made;
  const auto prompt = tokens_of(21, 3);
  Status st = s.append(prompt);
  EXPECT_TRUE(st.ok()) << st.message();
  out.push_back(s.logits());
  for (TokenId t : tokens_of(5, 4)) {
    st = s.append(std::span<const TokenId>(&t, 1));
    EXPECT_TRUE(st.ok()) << st.message();
    out.push_back(s.logits());
  }

  // A token tree: 0 -+- 1, 0 -- 2 -- 3, and 4 beside 0; then the path 0, 2, 3 kept.
  const std::vector<TokenId> tree = {101, 202, 303, 404, 505};
  const std::vector<int> parent = {-1, 0, 0, 2, -1};
  const std::size_t n = tree.size();
  std::vector<std::int32_t> positions(n);
  std::vector<std::uint8_t> ancestor(n * n, 0);
  const auto n_past = static_cast<std::uint32_t>(s.tokens().size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::int32_t depth = parent[i] < 0 ? 0 : positions[parent[i]] - static_cast<std::int32_t>(n_past) + 1;
    positions[i] = static_cast<std::int32_t>(n_past) + depth;
    for (int j = static_cast<int>(i); j >= 0; j = parent[j]) ancestor[i * n + j] = 1;
  }
  SequenceBatch verify;
  verify.tokens = tree;
  verify.positions = positions;
  verify.n_past = n_past;
  verify.ancestor = ancestor.data();
  verify.all_logits = true;
  std::vector<float> logits;
  st = s.forward(verify, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  out.push_back(logits);
  const std::vector<std::uint32_t> path = {n_past + 0, n_past + 2, n_past + 3};
  st = s.kv().compact(n_past, path);
  EXPECT_TRUE(st.ok()) << st.message();
  SequenceBatch next;
  const TokenId after = 77;
  next.tokens = std::span<const TokenId>(&after, 1);
  next.n_past = n_past + 3;
  st = s.forward(next, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  out.push_back(logits);
  // A rollback, then the taps and two chosen logit rows of a fresh pass over the same slots.
  st = s.kv().truncate(n_past);
  EXPECT_TRUE(st.ok()) << st.message();
  const auto more = tokens_of(6, 5);
  SequenceRows seq;
  seq.kv = &s.kv();
  seq.n_tokens = static_cast<std::uint32_t>(more.size());
  seq.n_past = n_past;
  const std::uint32_t rows[] = {5, 2};
  const std::int32_t taps[] = {0, 1, static_cast<std::int32_t>(p.model().params().n_main_layers())};
  ForwardBatch batch;
  batch.tokens = more;
  batch.sequences = std::span(&seq, 1);
  batch.logit_rows = rows;
  batch.hidden_layers = taps;
  batch.hidden_normed_output = true;
  ForwardOutput fo;
  st = s.forward(batch, fo);
  EXPECT_TRUE(st.ok()) << st.message();
  out.push_back(fo.logits);
  out.push_back(fo.hidden);
  return out;
}

// ---- the forward pass of every weight type the emulated device has kernels for ----

struct ModelCase {
  const char* arch;
  const char* type;
  const char* kv;
  bool tied = false;
};

class EmulatedForward : public ::testing::TestWithParam<ModelCase> {};

TEST_P(EmulatedForward, EqualsTheCpuBitForBit) {
  const ModelCase& c = GetParam();
  TempDir dir;
  const fs::path model = dir.path() / "m.gguf";
  auto r = run_command(std::string(GRAFT_EXE) + " synth --arch " + c.arch +
                       " --n-embd 256 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 600 --seed 7 --type " +
                       c.type + (c.tied ? " --tied" : "") + " --out " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto cpu = build(model, "cpu", c.kv);
  auto emu = build(model, "emu", c.kv);
  ASSERT_TRUE(cpu && emu);
  EXPECT_FALSE(emu->backend().host_accessible(MemoryKind::device));
  const auto want = trace(*cpu);
  const auto got = trace(*emu);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(want.size(), 10u);
  const char* const what[] = {"prompt", "step 1", "step 2", "step 3", "step 4", "step 5", "tree", "after the path",
                              "chosen rows", "taps"};
  for (std::size_t i = 0; i < want.size(); ++i) {
    EXPECT_FALSE(want[i].empty()) << what[i];
    EXPECT_TRUE(same_bits(got[i], want[i])) << what[i];
  }
}

INSTANTIATE_TEST_SUITE_P(types, EmulatedForward,
                         ::testing::Values(ModelCase{"qwen3", "f32", "f32"}, ModelCase{"qwen3", "f16", "f16"},
                                           ModelCase{"qwen3", "bf16", "f16"}, ModelCase{"qwen3", "q8_0", "f16"},
                                           ModelCase{"qwen3", "q4_k", "f16"}, ModelCase{"qwen3", "q1_0", "f16"},
                                           ModelCase{"llama", "q8_0", "f32"}, ModelCase{"qwen3", "q8_0", "f16", true}),
                         [](const auto& info) {
                           return std::string(info.param.arch) + "_" + info.param.type + "_kv_" + info.param.kv +
                                  (info.param.tied ? "_tied" : "");
                         });

// ---- graphs: every pass captured and launched as one, one graph per shape of pass ----

TEST(EmulatedGraphs, PassesAsGraphsEqualPassesWithoutAndDecodeStepsShareOneGraph) {
  TempDir dir;
  const fs::path model = dir.path() / "m.gguf";
  auto r = run_command(std::string(GRAFT_EXE) +
                       " synth --arch qwen3 --n-embd 256 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 600 "
                       "--type q8_0 --out " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  ModelOptions eager;
  eager.graphs = false;
  auto with = Pipeline::build(profile_for(model, "emu", "f16"), 64);
  auto without = Pipeline::build(profile_for(model, "emu", "f16"), 64, {}, eager);
  ASSERT_TRUE(with && without);
  const auto want = trace(**without);
  const auto got = trace(**with);
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_TRUE(same_bits(got[i], want[i])) << "output " << i;

  // Twenty decode steps: twenty launches of one graph, updated in place each step (other slots,
  // positions and ids), never made anew.
  auto s = (*with)->new_session();
  ASSERT_TRUE(s);
  ASSERT_TRUE((*s)->append(tokens_of(9, 1)).ok());
  const std::uint64_t before = (*s)->workspace().graph_launches;
  EXPECT_EQ(before, 1u) << "the prompt";
  for (TokenId t : tokens_of(20, 2)) ASSERT_TRUE((*s)->append(std::span<const TokenId>(&t, 1)).ok());
  EXPECT_EQ((*s)->workspace().graph_launches, before + 20);
  ASSERT_EQ((*s)->workspace().graphs.size(), 2u) << "the prompt's shape and the decode step's";
  for (const auto& [key, graph] : (*s)->workspace().graphs) EXPECT_EQ(graph->instantiations(), 1u) << key;
  // The eager pipeline launched none.
  auto e = (*without)->new_session();
  ASSERT_TRUE(e && (*e)->append(tokens_of(9, 1)).ok());
  EXPECT_EQ((*e)->workspace().graph_launches, 0u);
}

// ---- a hybrid (qwen35): the delta-net's state and its tree rows on the device ----

TEST(EmulatedHybrid, DecodeAndSpeculativeRoundsEqualTheCpu) {
  TempDir dir;
  const fs::path model = dir.path() / "m.gguf";
  auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --seed 5 --out " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto cpu = build(model, "cpu", "f32");
  auto emu = build(model, "emu", "f32");
  ASSERT_TRUE(cpu && emu);
  // Plain greedy on the CPU against speculation on the device: rounds of token trees (the script
  // drafter's: full, partial and no acceptance, rejected branches), their accepted rows committed
  // into the recurrent state, the rest rolled back.
  const std::vector<TokenId> prompt = {5, 9, 13, 5, 9, 13, 5, 9, 13, 5, 9, 13, 21, 40, 5, 9};
  const zoo::Generated plain = zoo::generate(*cpu, prompt, zoo::greedy(), 48, nullptr);
  const zoo::Generated plain_emu = zoo::generate(*emu, prompt, zoo::greedy(), 48, nullptr);
  EXPECT_EQ(plain_emu.ids, plain.ids);
  EXPECT_TRUE(same_bits(plain_emu.logits, plain.logits));
  std::string script;
  for (TokenId t : prompt) script += std::to_string(t) + ",";
  for (TokenId t : plain.ids) script += std::to_string(t) + ",";
  Config c;
  c.set("script", script);
  auto set = zoo::drafters(*emu, {zoo::drafter("script", c), zoo::drafter("ngram")}, 24, 8, false);
  ASSERT_TRUE(set);
  auto decoder = set->new_decoder();
  ASSERT_TRUE(decoder) << decoder.status().message();
  const zoo::Generated spec = zoo::generate(*emu, prompt, zoo::greedy(), 48, decoder->get());
  EXPECT_EQ(spec.ids, plain.ids);
  EXPECT_GT((*decoder)->stats().tokens_per_round(), 1.5) << "few drafts accepted: the rounds were not exercised";
}

// ---- speculation on the device: the zoo target with its MTP head and n-gram ----

TEST(EmulatedSpeculation, GreedyWithEveryDrafterEqualsPlainGreedyOnTheCpu) {
  auto cpu = build(zoo::kTarget, "cpu", "f16", 512);
  auto emu = build(zoo::kTarget, "emu", "f16", 512);
  ASSERT_TRUE(cpu && emu);
  const std::vector<std::vector<std::string>> configs = {{"ngram"}, {"mtp"}, {"ngram", "mtp"}};
  const auto prompts = zoo::corpus();
  ASSERT_GE(prompts.size(), 8u);
  double rounds = 0;
  int runs = 0;
  for (std::size_t i = 0; i < prompts.size(); i += prompts.size() / 4) {
    const auto prompt = zoo::tokenize(*cpu, prompts[i].second);
    const zoo::Generated plain = zoo::generate(*cpu, prompt, zoo::greedy(), 96, nullptr);
    ASSERT_EQ(plain.ids.size(), 96u) << prompts[i].first;
    for (const auto& names : configs) {
      std::vector<PluginChoice> list;
      for (const auto& n : names) list.push_back(zoo::drafter(n));
      auto set = zoo::drafters(*emu, list, 16, 8, false);
      ASSERT_TRUE(set);
      auto decoder = set->new_decoder();
      ASSERT_TRUE(decoder) << decoder.status().message();
      const zoo::Generated spec = zoo::generate(*emu, prompt, zoo::greedy(), 96, decoder->get());
      EXPECT_EQ(spec.ids, plain.ids) << prompts[i].first << " with " << names.size() << " drafters, first " << names[0];
      rounds += (*decoder)->stats().tokens_per_round();
      ++runs;
    }
  }
  EXPECT_GT(rounds / runs, 1.3) << "the drafters were rarely accepted: the rounds were not exercised";
}

// ---- the emulator's own guarantees: what makes the tests above mean something ----

class EmulatorChecks : public ::testing::Test {
 protected:
  void SetUp() override {
    p_ = build(zoo::kTarget, "emu", "f16", 64);
    ASSERT_TRUE(p_);
  }
  Backend& be() { return p_->backend(); }
  std::unique_ptr<Buffer> alloc(std::size_t floats, MemoryKind kind) {
    auto b = be().allocate(floats * sizeof(float), kind);
    EXPECT_TRUE(b) << b.status().message();
    return b ? std::move(*b) : nullptr;
  }
  std::unique_ptr<Pipeline> p_;
};

TEST_F(EmulatorChecks, DeviceMemoryFaultsOnTheHostAndWorkRunsWhenWaitedFor) {
  EXPECT_FALSE(be().host_accessible(MemoryKind::device));
  EXPECT_TRUE(be().host_accessible(MemoryKind::pinned_host));
  auto dev = alloc(4, MemoryKind::device), in = alloc(4, MemoryKind::pinned_host), out = alloc(4, MemoryKind::pinned_host);
  ASSERT_TRUE(dev && in && out);
  // An address no process maps: a host read would fault, not pass.
  EXPECT_NE(reinterpret_cast<std::uintptr_t>(dev->data()) >> 62, 0u);
  auto* x = static_cast<float*>(in->data());
  auto* y = static_cast<float*>(out->data());
  for (int i = 0; i < 4; ++i) x[i] = float(i + 1), y[i] = -1;
  ASSERT_TRUE(be().copy_async(dev->data(), MemoryKind::device, x, MemoryKind::pinned_host, 16).ok());
  ASSERT_TRUE(be().copy_async(y, MemoryKind::pinned_host, dev->data(), MemoryKind::device, 16).ok());
  auto ev = be().record_event();
  ASSERT_TRUE(ev);
  EXPECT_FALSE((*ev)->ready());
  EXPECT_EQ(y[3], -1.0f) << "the copies ran before anything waited for them";
  ASSERT_TRUE((*ev)->synchronize().ok());
  EXPECT_TRUE((*ev)->ready());
  EXPECT_EQ(y[3], 4.0f);
}

TEST_F(EmulatorChecks, AViewWhoseLabelLiesIsRefusedNamingTheOpAndTheTensor) {
  auto dev = alloc(8, MemoryKind::device), w = alloc(8, MemoryKind::device);
  std::vector<float> host(8, 1.0f);
  ASSERT_TRUE(dev && w);
  // Device memory labelled host (what the core did with its activations before this emulator).
  Status st = be().rms_norm(f32_view(static_cast<float*>(dev->data()), 8), f32_view(static_cast<float*>(w->data()), 8, 1, 1, MemoryKind::device),
                            1e-6f, f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device));
  EXPECT_EQ(st.message(), "emu rms_norm: x is labelled host memory but points into device memory");
  // Host memory labelled device.
  st = be().add(f32_view(host.data(), 8, 1, 1, MemoryKind::device), f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device),
                f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device));
  EXPECT_EQ(st.message(), "emu add: a is labelled device memory but points into host memory");
  // Pageable host memory, where a GPU kernel cannot read.
  st = be().add(f32_view(host.data(), 8), f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device),
                f32_view(static_cast<float*>(dev->data()), 8, 1, 1, MemoryKind::device));
  EXPECT_EQ(st.message(), "emu add: a is in pageable host memory; device work reads device or pinned host memory");
}

TEST_F(EmulatorChecks, AGraphReplaysItsCaptureAndUpdatesInPlaceWhenTheShapeHolds) {
  auto a = alloc(4, MemoryKind::device), in = alloc(4, MemoryKind::pinned_host), out = alloc(4, MemoryKind::pinned_host);
  ASSERT_TRUE(a && in && out);
  auto* x = static_cast<float*>(in->data());
  auto* y = static_cast<float*>(out->data());
  const TensorView av = f32_view(static_cast<float*>(a->data()), 4, 1, 1, MemoryKind::device);
  auto capture = [&](bool twice) {
    EXPECT_TRUE(be().begin_capture().ok());
    EXPECT_TRUE(be().copy_async(a->data(), MemoryKind::device, x, MemoryKind::pinned_host, 16).ok());
    EXPECT_TRUE(be().add(av, av, av).ok());
    if (twice) EXPECT_TRUE(be().add(av, av, av).ok());
    EXPECT_TRUE(be().copy_async(y, MemoryKind::pinned_host, a->data(), MemoryKind::device, 16).ok());
  };
  std::unique_ptr<Graph> g;
  capture(false);
  // Inside a capture nothing may wait, and pageable host memory cannot be copied.
  std::vector<float> pageable(4);
  EXPECT_FALSE(be().synchronize().ok());
  EXPECT_FALSE(be().copy_async(a->data(), MemoryKind::device, pageable.data(), MemoryKind::host, 16).ok());
  ASSERT_TRUE(be().end_capture(g).ok());
  ASSERT_TRUE(g);
  for (float v : {1.0f, 5.0f}) {  // the graph reads its input where the capture did, each launch
    for (int i = 0; i < 4; ++i) x[i] = v + float(i);
    ASSERT_TRUE(g->launch().ok());
    ASSERT_TRUE(be().synchronize().ok());
    EXPECT_EQ(y[1], 2 * (v + 1));
  }
  capture(false);
  ASSERT_TRUE(be().end_capture(g).ok());
  EXPECT_EQ(g->instantiations(), 1u) << "the same steps: updated in place";
  capture(true);
  ASSERT_TRUE(be().end_capture(g).ok());
  EXPECT_EQ(g->instantiations(), 2u) << "another step: made anew";
  x[1] = 1;
  ASSERT_TRUE(g->launch().ok());
  ASSERT_TRUE(be().synchronize().ok());
  EXPECT_EQ(y[1], 4.0f);
}

// ---- what it refuses ----

TEST(EmulatedDevice, AWeightTypeWithoutKernelsThereIsOneLineAtLoad) {
  TempDir dir;
  const fs::path model = dir.path() / "m.gguf";
  auto r = run_command(std::string(GRAFT_EXE) +
                       " synth --arch qwen3 --n-embd 256 --n-layer 1 --n-head 4 --n-head-kv 2 --n-ff 512 --n-vocab 600 "
                       "--type q4_0 --out " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto p = Pipeline::build(profile_for(model, "emu", "f16"), 16);
  ASSERT_FALSE(p);
  const std::string m = p.status().message();
  EXPECT_NE(m.find("q4_0"), std::string::npos) << m;
  EXPECT_NE(m.find("emu"), std::string::npos) << m;
  EXPECT_EQ(m.find('\n'), std::string::npos) << m;
}

}  // namespace
