// qwen35 (shared/reference/qwen35.md) loading: its keys and layer kinds read from a synthetic file,
// its tensors bound by name, bad files refused by the key or tensor at fault. Its forward pass:
// qwen35_forward_test.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <functional>

#include "engine/pipeline.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/architecture.hpp"
#include "model/model_params.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

class Qwen35Load : public ::testing::Test {
 protected:
  void SetUp() override {
    base_ = dir_.path() / "qwen35.gguf";
    auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --out " + base_.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }

  // The base file with its metadata changed by `meta` (key, value: return false to drop it) and
  // without the tensor `drop`.
  std::filesystem::path variant(const std::string& name, const std::function<bool(const std::string&, gguf::Value&)>& meta,
                                const std::string& drop = "") {
    auto src = gguf::File::open(base_);
    EXPECT_TRUE(src) << src.status().message();
    gguf::Writer w;
    for (const auto& kv : (*src)->metadata()) {
      gguf::Value v = kv.value;
      if (meta(kv.key, v)) w.add(kv.key, v);
    }
    for (const auto& t : (*src)->tensors()) {
      if (t.name == drop) continue;
      EXPECT_TRUE(w.add_tensor(t.name, std::span(t.ne.data(), t.n_dims), t.type, std::span(t.data, t.bytes)).ok());
    }
    const auto out = dir_.path() / (name + ".gguf");
    EXPECT_TRUE(w.write(out).ok());
    return out;
  }
  static bool keep(const std::string&, gguf::Value&) { return true; }

  Status build(const std::filesystem::path& model) {
    Profile profile = Profile::builtin();
    profile.model = model;
    profile.context = 64;
    profile.threads = 1;
    auto p = Pipeline::build(profile, 8);
    return p ? Status::success() : p.status();
  }

  TempDir dir_;
  std::filesystem::path base_;
};

TEST_F(Qwen35Load, KeysAndLayerKindsAreRead) {
  auto f = gguf::File::open(base_);
  ASSERT_TRUE(f);
  auto p = ModelParams::from_gguf(**f);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->arch_name, "qwen35");
  // Layer i is a delta-net unless (i + 1) is a multiple of full_attention_interval (4).
  EXPECT_EQ(p->layer_kinds, (std::vector<LayerKind>{LayerKind::delta_net, LayerKind::delta_net, LayerKind::delta_net,
                                                    LayerKind::gated_attention}));
  EXPECT_EQ(p->ssm_conv_kernel, 4u);
  EXPECT_EQ(p->ssm_state, 16u);
  EXPECT_EQ(p->ssm_groups, 2u);
  EXPECT_EQ(p->ssm_heads, 4u);
  EXPECT_EQ(p->ssm_channels(), 2u * 2 * 16 + 4 * 16);
  EXPECT_EQ(p->n_rot, 16u);  // partial rotary: 16 of 32 dims
  EXPECT_EQ(p->kv_layers(), 1u);
  EXPECT_EQ(p->kv_geometry(64).n_layers, 1u);  // a KV cache for the attention layer only
  EXPECT_TRUE(p->rope_neox);
  EXPECT_TRUE(p->qk_norm);
}

TEST_F(Qwen35Load, TheModelLoads) {
  const Status st = build(base_);
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST_F(Qwen35Load, AMissingDeltaNetTensorIsNamed) {
  const auto m = variant("no_ssm_a", keep, "blk.1.ssm_a");
  const Status st = build(m);
  EXPECT_EQ(st.message(), m.string() + ": missing tensor 'blk.1.ssm_a'");
}

TEST_F(Qwen35Load, ABadFullAttentionIntervalIsNamed) {
  auto zero = variant("interval0", [](const std::string& k, gguf::Value& v) {
    if (k == "qwen35.full_attention_interval") v.u = 0, v.i = 0;
    return true;
  });
  EXPECT_EQ(build(zero).message(), zero.string() + ": qwen35.full_attention_interval = 0 is out of range");
  // An interval past the layer count leaves no attention layer.
  auto wide = variant("interval9", [](const std::string& k, gguf::Value& v) {
    if (k == "qwen35.full_attention_interval") v.u = 9, v.i = 9;
    return true;
  });
  EXPECT_EQ(build(wide).message(),
            wide.string() + ": qwen35.full_attention_interval 9 leaves no full-attention layer among 4");
}

TEST_F(Qwen35Load, AnUnsupportedConvKernelIsNamed) {
  auto m = variant("kc9", [](const std::string& k, gguf::Value& v) {
    if (k == "qwen35.ssm.conv_kernel") v.u = 9, v.i = 9;
    return true;
  });
  const Status st = build(m);
  EXPECT_EQ(st.code(), Errc::unsupported);
  EXPECT_EQ(st.message(), m.string() + ": qwen35.ssm.conv_kernel = 9 is not supported (2..8)");
}

TEST_F(Qwen35Load, AMissingSsmKeyIsNamed) {
  auto m = variant("no_state", [](const std::string& k, gguf::Value&) { return k != "qwen35.ssm.state_size"; });
  EXPECT_EQ(build(m).message(), m.string() + ": missing or non-integer metadata key 'qwen35.ssm.state_size'");
}

TEST_F(Qwen35Load, GraftInfoShowsTheLayerKinds) {
  auto r = run_command(std::string(GRAFT_EXE) + " info " + base_.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("layers:      4 (1 gated_attention, 3 delta_net)"), std::string::npos) << r.output;
  // KV for the one attention layer only (2 x 2 KV heads x 32); per delta-net layer a conv window of
  // 3 x 128 channels and 4 heads of 16 x 16: 1408 floats, three layers.
  EXPECT_NE(r.output.find("kv cache:    128 elements per token (K and V of 1 attention layers)"), std::string::npos);
  EXPECT_NE(r.output.find("recurrent:   4224 f32 per sequence (16.5 KiB; conv windows and delta-rule states of 3 layers)"),
            std::string::npos)
      << r.output;
}

}  // namespace

#include "reference_transformer.hpp"

namespace {

// qwen35 with every layer full attention (--full-attention-interval 1): the gated attention
// (query | gate per head, per-head q/k norms, partial NEOX rotary, attn *= sigmoid(gate)) and
// post_attention_norm run, and the logits of every position equal the double-precision reference
// written from the architecture (reference_transformer.hpp); decoding token by token equals the
// batched pass.
TEST(Qwen35GatedAttention, LogitsMatchTheReferenceAndDecodingMatchesPrefill) {
  constexpr double kLogitTol = 2e-4;  // f32 weights and activations against double, relative to the logits' spread
  TempDir dir;
  const auto model = dir.path() / "gated.gguf";
  auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --full-attention-interval 1 --seed 3 --out " +
                       model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Profile profile = Profile::builtin();
  profile.model = model;
  profile.context = 64;
  profile.threads = 2;
  profile.kv.config.set("type", std::string("f32"));
  auto p = Pipeline::build(profile, 16);
  ASSERT_TRUE(p) << p.status().message();
  const ModelParams& mp = (*p)->model().params();
  EXPECT_EQ(mp.count(LayerKind::gated_attention), 4u);
  auto s = (*p)->new_session();
  ASSERT_TRUE(s);
  std::vector<TokenId> tokens;
  for (int i = 0; i < 10; ++i) tokens.push_back(static_cast<TokenId>((i * 7919 + 13) % mp.n_vocab));
  std::vector<float> logits;
  SequenceBatch batch;
  batch.tokens = tokens;
  batch.all_logits = true;
  ASSERT_TRUE((*s)->forward(batch, logits).ok());

  const ref::Params rp = ref::params_of(mp);
  ASSERT_EQ(rp.interval, 1);  // every layer full attention
  ref::Transformer reference((*p)->model().file(), rp);
  const auto want = reference.forward(std::vector<int>(tokens.begin(), tokens.end()));
  const std::size_t V = mp.n_vocab;
  for (std::size_t t = 0; t < tokens.size(); ++t) {
    double spread = 0, worst = 0;
    for (std::size_t v = 0; v < V; ++v) spread = std::max(spread, std::fabs(want[t][v]));
    for (std::size_t v = 0; v < V; ++v) worst = std::max(worst, std::fabs(logits[t * V + v] - want[t][v]));
    EXPECT_LT(worst, kLogitTol * std::max(1.0, spread)) << "position " << t;
    EXPECT_GT(spread, 0.1) << "degenerate logits";
  }
  // One token at a time: the same last logits, bit for bit (rows never depend on the batch).
  auto one = (*p)->new_session();
  ASSERT_TRUE(one);
  for (TokenId t : tokens) ASSERT_TRUE((*one)->append(std::span<const TokenId>(&t, 1)).ok());
  const std::vector<float> last(logits.end() - static_cast<std::ptrdiff_t>(V), logits.end());
  EXPECT_EQ((*one)->logits(), last);
}

}  // namespace

namespace {

// Every CLI command that runs a model runs qwen35: run (with its memory line), perplexity, bench.
TEST_F(Qwen35Load, TheCommandsRunIt) {
  auto r = run_command(std::string(GRAFT_EXE) + " run --model " + base_.string() + " --prompt hello -n 8 -t 1 --temp 0");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("generated 8 tokens"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find(", recurrent state "), std::string::npos) << r.output;
  const auto text = dir_.path() / "text.txt";
  std::ofstream(text) << "the quick brown fox jumps over the lazy dog, again and again and again.\n";
  r = run_command(std::string(GRAFT_EXE) + " perplexity --model " + base_.string() + " --file " + text.string() +
                  " --ctx 16 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("Final estimate: PPL = "), std::string::npos) << r.output;
  r = run_command(std::string(GRAFT_EXE) + " bench --model " + base_.string() +
                  " --prompt-tokens 8 --gen-tokens 8 --reps 1 --verify-cost 4 -t 1");
  ASSERT_EQ(r.exit_code, 0) << r.output;
}

}  // namespace
