// MTP (nextn) blocks stored after a model's main layers, as llama.cpp stores Qwen3.5/GLM4 MTP
// heads: `<arch>.nextn_predict_layers` of the `block_count` blocks are the last ones, and the
// forward pass runs only the others. Checked on the zoo target, whose blk.4 is its MTP head.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/pipeline.hpp"
#include "gguf/gguf_writer.hpp"
#include "model/model_params.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

const std::filesystem::path kZoo = std::filesystem::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";

std::shared_ptr<const gguf::File> open(const std::filesystem::path& p) {
  auto f = gguf::File::open(p);
  EXPECT_TRUE(f) << f.status().message();
  return f ? *f : nullptr;
}

// A copy of `src` with metadata overrides (nullopt value: key removed) and without the tensors
// whose names start with `drop_prefix` (when not empty).
void rewrite(const gguf::File& src, const std::filesystem::path& dst,
             const std::vector<std::pair<std::string, std::optional<std::uint32_t>>>& overrides,
             const std::string& drop_prefix = "") {
  gguf::Writer w;
  for (const auto& kv : src.metadata()) {
    auto it = std::find_if(overrides.begin(), overrides.end(), [&](const auto& o) { return o.first == kv.key; });
    if (it == overrides.end()) w.add(kv.key, kv.value);
  }
  for (const auto& [key, value] : overrides)
    if (value) w.add_u32(key, *value);
  for (const auto& t : src.tensors()) {
    if (!drop_prefix.empty() && t.name.rfind(drop_prefix, 0) == 0) continue;
    ASSERT_TRUE(w.add_tensor(t.name, std::span(t.ne.data(), t.n_dims), t.type, std::span(t.data, t.bytes)).ok());
  }
  ASSERT_TRUE(w.write(dst).ok());
}

std::vector<float> logits_of(const std::filesystem::path& model, const std::vector<TokenId>& tokens) {
  Profile profile = Profile::builtin();
  profile.model = model;
  profile.context = 64;
  profile.threads = 2;
  profile.kv.config.set("type", std::string("f32"));
  auto p = Pipeline::build(profile, 16);
  EXPECT_TRUE(p) << p.status().message();
  if (!p) return {};
  auto session = (*p)->new_session();
  EXPECT_TRUE(session) << session.status().message();
  if (!session) return {};
  SequenceBatch batch;
  batch.tokens = tokens;
  batch.all_logits = true;
  std::vector<float> logits;
  Status st = (*session)->forward(batch, logits);
  EXPECT_TRUE(st.ok()) << st.message();
  return logits;
}

}  // namespace

TEST(model_nextn, ZooTargetCountsItsMtpBlockInBlockCount) {
  auto f = open(kZoo);
  ASSERT_TRUE(f);
  auto p = ModelParams::from_gguf(*f);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->n_layer, 5u);
  EXPECT_EQ(p->n_nextn, 1u);
  EXPECT_EQ(p->n_main_layers(), 4u);
  EXPECT_NE(f->tensor("blk.4.nextn.eh_proj.weight"), nullptr);
  EXPECT_NE(f->tensor("blk.4.attn_q.weight"), nullptr);
}

TEST(model_nextn, AsManyNextnLayersAsBlocksIsAnError) {
  auto f = open(kZoo);
  ASSERT_TRUE(f);
  TempDir dir;
  const auto bad = dir.path() / "all-nextn.gguf";
  rewrite(*f, bad, {{"qwen3.nextn_predict_layers", 5u}});
  auto g = open(bad);
  ASSERT_TRUE(g);
  auto p = ModelParams::from_gguf(*g);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().message(), bad.string() + ": nextn_predict_layers 5 >= block_count 5");
}

// The MTP block is never run: removing it (and its count) leaves every logit bit-identical.
TEST(model_nextn, ForwardPassIgnoresTheMtpBlock) {
  auto f = open(kZoo);
  ASSERT_TRUE(f);
  TempDir dir;
  const auto stripped = dir.path() / "no-nextn.gguf";
  rewrite(*f, stripped, {{"qwen3.block_count", 4u}, {"qwen3.nextn_predict_layers", std::nullopt}}, "blk.4.");
  const std::vector<TokenId> tokens = {4091, 755, 1054, 272, 286, 310, 381, 95};
  const auto with = logits_of(kZoo, tokens), without = logits_of(stripped, tokens);
  ASSERT_EQ(with.size(), tokens.size() * 4096);
  ASSERT_EQ(with.size(), without.size());
  for (std::size_t i = 0; i < with.size(); ++i) ASSERT_EQ(with[i], without[i]) << "logit " << i;
}

// A file whose nextn block were read as a main layer would change every logit: the count matters.
// Without the count the MTP block would look like a fifth layer whose nextn.* tensors nothing
// reads: the loader refuses it by name instead of running a different model.
TEST(model_nextn, WithoutTheCountTheMtpBlockIsRefused) {
  auto f = open(kZoo);
  ASSERT_TRUE(f);
  TempDir dir;
  const auto uncounted = dir.path() / "uncounted.gguf";
  rewrite(*f, uncounted, {{"qwen3.nextn_predict_layers", std::nullopt}});
  Profile profile = Profile::builtin();
  profile.model = uncounted;
  profile.context = 64;
  auto p = Pipeline::build(profile, 16);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().message(), uncounted.string() +
                                      ": tensor 'blk.4.nextn.eh_proj.weight' is not used: graft's qwen3 forward pass "
                                      "does not use it; refusing to run a model that would compute differently from "
                                      "its definition");
}
