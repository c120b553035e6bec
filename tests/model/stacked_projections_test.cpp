// q/k/v and gate/up stacked into one matrix each (stacked_matrix.hpp) give the logits of the
// separate matrices bit for bit, in batches and in decode, on every layout the kernels read; a
// layer whose parts differ in type keeps them separate.
#include <gtest/gtest.h>

#include "engine/pipeline.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

struct Case {
  const char* name;
  const char* synth;     // graft synth flags
  const char* quantize;  // then graft quantize flags ("" = none)
  bool all_stacked;      // false: layer 0's q/k/v differ in type
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class StackedProjections : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    const Case& c = GetParam();
    model_ = dir_.path() / "m.gguf";
    const auto synth_out = *c.quantize ? dir_.path() / "f32.gguf" : model_;
    auto r = run_command(std::string(GRAFT_EXE) + " synth --n-embd 256 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 512 " +
                         "--n-vocab 500 --seed 11 " + c.synth + " --out " + synth_out.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
    if (*c.quantize) {
      r = run_command(std::string(GRAFT_EXE) + " quantize " + synth_out.string() + " " + model_.string() + " " + c.quantize);
      ASSERT_EQ(r.exit_code, 0) << r.output;
    }
  }

  std::unique_ptr<Pipeline> pipeline(bool fuse) {
    Profile profile = Profile::builtin();
    profile.model = model_;
    profile.context = 64;
    profile.threads = 2;
    ModelOptions options;
    options.fuse_projections = fuse;
    auto p = Pipeline::build(profile, 16, {}, options);
    EXPECT_TRUE(p) << p.status().message();
    return p ? std::move(*p) : nullptr;
  }

  // A 9-token batch (every row's logits), then 3 decoded tokens (greedy).
  static std::vector<float> run(Pipeline& p) {
    auto session = p.new_session();
    EXPECT_TRUE(session) << session.status().message();
    if (!session) return {};
    Session& s = **session;
    std::vector<TokenId> prompt(9);
    for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>((i * 131 + 7) % 500);
    std::vector<float> all, logits;
    SequenceBatch b;
    b.tokens = prompt;
    b.all_logits = true;
    EXPECT_TRUE(s.forward(b, logits).ok());
    all = logits;
    for (std::uint32_t i = 0; i < 3; ++i) {
      const std::size_t V = p.model().params().n_vocab;
      const float* last = logits.data() + logits.size() - V;
      TokenId next = static_cast<TokenId>(std::max_element(last, last + V) - last);
      SequenceBatch d;
      d.tokens = std::span<const TokenId>(&next, 1);
      d.n_past = static_cast<std::uint32_t>(prompt.size() + i);
      EXPECT_TRUE(s.forward(d, logits).ok());
      all.insert(all.end(), logits.begin(), logits.end());
    }
    return all;
  }

  TempDir dir_;
  std::filesystem::path model_;
};

TEST_P(StackedProjections, GiveTheSeparateMatricesLogitsBitForBit) {
  auto fused = pipeline(true), separate = pipeline(false);
  ASSERT_TRUE(fused && separate);
  const auto& layers = fused->model().weights().layers;
  ASSERT_EQ(layers.size(), 2u);
  for (std::size_t il = 0; il < layers.size(); ++il) {
    EXPECT_EQ(layers[il].qkv_stacked(), GetParam().all_stacked || il > 0) << "layer " << il;
    EXPECT_TRUE(layers[il].gate_up_stacked()) << "layer " << il;
    EXPECT_FALSE(separate->model().weights().layers[il].qkv_stacked());
    EXPECT_FALSE(separate->model().weights().layers[il].gate_up_stacked());
  }
  // Same bytes read per token either way.
  EXPECT_EQ(fused->model().weights().total_bytes, separate->model().weights().total_bytes);
  const auto a = run(*fused), b = run(*separate);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    ASSERT_EQ(std::bit_cast<std::uint32_t>(a[i]), std::bit_cast<std::uint32_t>(b[i])) << "logit " << i;
}

INSTANTIATE_TEST_SUITE_P(
    model, StackedProjections,
    ::testing::Values(Case{"llama_f32", "--arch llama", "", true},
                      Case{"qwen3_q8_0", "--arch qwen3 --type q8_0", "", true},  // the file's layout, copied
                      Case{"qwen3_tied_q1_0", "--arch qwen3 --tied --type q1_0", "", true},  // packed where AVX-512 is
                      Case{"llama_q4_k", "--arch llama --type q4_k", "", true},
                      Case{"llama_mixed", "--arch llama", "--type q4_0 --tensor-type blk\\\\.0\\\\.attn_v=q8_0", false}),
    [](const auto& info) { return std::string(info.param.name); });

}  // namespace
