// The cost-realistic benchmark target (bench/spec/pad: the zoo model plus inert layers) must be a
// pure cost: the same greedy tokens and final logits as the zoo model, and its MTP block and the
// DFlash2 drafter's taps still the zoo's (the drafters load and are accepted, output unchanged).
#include <gtest/gtest.h>

#include "gguf/gguf_file.hpp"
#include "inert_padding.hpp"
#include "zoo_test_util.hpp"

namespace {

using namespace zoo;

std::unique_ptr<Pipeline> pipeline_for(const fs::path& model) {
  Profile profile = Profile::builtin();
  profile.model = model;
  profile.context = 512;
  profile.threads = 1;
  auto p = Pipeline::build(profile, 256);
  EXPECT_TRUE(p) << p.status().message();
  return p ? std::move(*p) : nullptr;
}

class PaddedTarget : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    path_ = fs::path(::testing::TempDir()) / "graft-zoo-padded-3.gguf";
    auto r = graft::bench::pad_with_inert_layers(kTarget, path_, 3);
    ASSERT_TRUE(r) << r.status().message();
    EXPECT_EQ(r->main_layers, 4u);
    EXPECT_EQ(r->nextn_layers, 1u);
  }
  static void TearDownTestSuite() { fs::remove(path_); }
  static fs::path path_;
};
fs::path PaddedTarget::path_;

TEST_F(PaddedTarget, FileHasTheInertLayersAndTheNextnBlockAfterThem) {
  auto f = graft::gguf::File::open(path_);
  ASSERT_TRUE(f) << f.status().message();
  EXPECT_EQ((*f)->get_int("qwen3.block_count"), 8);  // 4 main + 3 inert + 1 nextn
  EXPECT_EQ((*f)->get_int("graft.bench.inert_layers"), 3);
  ASSERT_TRUE((*f)->tensor("blk.7.nextn.eh_proj.weight"));
  EXPECT_FALSE((*f)->tensor("blk.4.nextn.eh_proj.weight"));
  // An inert layer: the real layer's weights, zeros where it would write the residual stream.
  const auto* q3 = (*f)->tensor("blk.3.attn_q.weight");
  const auto* q5 = (*f)->tensor("blk.5.attn_q.weight");
  ASSERT_TRUE(q3 && q5);
  EXPECT_TRUE(std::equal(q3->data, q3->data + q3->bytes, q5->data));
  for (const char* name : {"blk.5.attn_output.weight", "blk.5.ffn_down.weight"}) {
    const auto* t = (*f)->tensor(name);
    ASSERT_TRUE(t) << name;
    EXPECT_TRUE(std::all_of(t->data, t->data + t->bytes, [](std::uint8_t b) { return b == 0; })) << name;
  }
}

TEST_F(PaddedTarget, GreedyTokensAndLogitsEqualTheZooModelsWithAndWithoutDrafters) {
  auto zoo_p = pipeline_for(kTarget);
  auto pad_p = pipeline_for(path_);
  ASSERT_TRUE(zoo_p && pad_p);
  EXPECT_EQ(pad_p->model().params().n_main_layers(), 7u);
  Config dflash;
  dflash.set("model", (kRoot / "models" / "zoo-dflash2-2x256.gguf").string());
  auto set = drafters(*pad_p, {drafter("ngram"), drafter("mtp"), drafter("dflash2", dflash)}, 16, 8, /*adaptive=*/false);
  ASSERT_TRUE(set);
  const auto prompts = corpus();
  for (std::size_t i = 0; i < prompts.size(); i += 16) {
    const auto prompt = tokenize(*zoo_p, prompts[i].second);
    const Generated a = generate(*zoo_p, prompt, greedy(), 64, nullptr);
    const Generated b = generate(*pad_p, prompt, greedy(), 64, nullptr);
    ASSERT_EQ(a.ids, b.ids) << prompts[i].first;
    EXPECT_EQ(a.logits, b.logits) << prompts[i].first;
    auto decoder = set->new_decoder();
    ASSERT_TRUE(decoder) << decoder.status().message();
    const Generated c = generate(*pad_p, prompt, greedy(), 64, decoder->get());
    EXPECT_EQ(c.ids, a.ids) << prompts[i].first;
    const SpeculativeStats& st = (*decoder)->stats();
    for (const DrafterStats& d : st.drafters) {
      EXPECT_EQ(d.failures, 0u) << d.name;
      EXPECT_GT(d.accepted, 0u) << d.name << " on " << prompts[i].first;
    }
  }
}

}  // namespace
