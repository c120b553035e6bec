// The zoo's drafters as files: the DFlash2 GGUF's metadata and tensors (llama.cpp's `dflash`
// convention) and the drafter fixtures written by tools/zoo/drafter_fixtures.py: these tests pin
// the files the drafters are checked against, and that the fixtures continue graft's own target.
// The mtp and dflash2 drafters' proposals are checked against zoo-mtp.* and zoo-dflash2.* in
// tests/speculative.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/pipeline.hpp"
#include "gguf/gguf_file.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

const std::filesystem::path kRoot = std::filesystem::path(GRAFT_SOURCE_DIR);
const std::filesystem::path kTarget = kRoot / "models" / "zoo-qwen3-4x256.gguf";
const std::filesystem::path kDFlash = kRoot / "models" / "zoo-dflash2-2x256.gguf";
const std::filesystem::path kFixtures = kRoot / "tests" / "fixtures";

nlohmann::json load_json(const std::string& name) {
  std::ifstream in(kFixtures / name);
  std::ostringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str());
}

std::vector<std::uint64_t> shape(const gguf::TensorInfo& t) { return {t.ne.begin(), t.ne.begin() + t.n_dims}; }

}  // namespace

TEST(zoo_drafters, DFlashGgufStatesBlockMaskLayersAndParts) {
  auto f = gguf::File::open(kDFlash);
  ASSERT_TRUE(f) << f.status().message();
  const gguf::File& g = **f;
  const auto fx = load_json("zoo-dflash2.json");
  EXPECT_EQ(g.get_string("general.architecture"), "dflash");
  EXPECT_EQ(g.get_int("dflash.block_size"), 8);
  EXPECT_EQ(fx["block_size"].get<int>(), 8);
  EXPECT_EQ(g.get_int("tokenizer.ggml.mask_token_id"), fx["mask_token_id"].get<std::int64_t>());
  const auto layers = g.get_int_array("dflash.target_layers");
  ASSERT_TRUE(layers);
  EXPECT_EQ(*layers, fx["target_layers"].get<std::vector<std::int64_t>>());
  EXPECT_GE(layers->size(), 3u);
  EXPECT_EQ(g.get_int("dflash.conv_kernel_size"), 2);
  EXPECT_EQ(g.get_int("dflash.conv_group_size"), 16);
  EXPECT_EQ(g.get_int("dflash.selector_top_k"), 8);
  const auto parts = g.get_string("dflash.parts");
  ASSERT_TRUE(parts);
  EXPECT_NE(parts->find("dynamic causal conv"), std::string::npos);
  EXPECT_NE(parts->find("top-k candidate selector"), std::string::npos);
}

TEST(zoo_drafters, DFlashGgufHasLlamaCppTensorNamesAndSharesTheTargetEmbedding) {
  auto f = gguf::File::open(kDFlash);
  ASSERT_TRUE(f) << f.status().message();
  const gguf::File& g = **f;
  const std::int64_t n_layer = g.get_int("dflash.block_count").value_or(0);
  ASSERT_EQ(n_layer, 2);
  using S = std::vector<std::uint64_t>;
  const std::vector<std::pair<std::string, S>> want = {
      {"fc.weight", {768, 256}}, {"enc.output_norm.weight", {256}}, {"output_norm.weight", {256}},
      {"selector_predecessor.weight", {32, 4096}}, {"selector_successor.weight", {32, 4096}},
      {"selector_hidden.weight", {256, 32}}};
  for (const auto& [name, s] : want) {
    const auto* t = g.tensor(name);
    ASSERT_NE(t, nullptr) << name;
    EXPECT_EQ(shape(*t), s) << name;
  }
  for (std::int64_t i = 0; i < n_layer; ++i) {
    const std::string p = "blk." + std::to_string(i) + ".";
    for (const char* n : {"attn_norm.weight", "attn_q.weight", "attn_k.weight", "attn_v.weight", "attn_output.weight",
                          "attn_q_norm.weight", "attn_k_norm.weight", "ffn_norm.weight", "ffn_gate.weight",
                          "ffn_up.weight", "ffn_down.weight"})
      EXPECT_NE(g.tensor(p + n), nullptr) << p + n;
    ASSERT_NE(g.tensor(p + "attn_conv_base"), nullptr);
    EXPECT_EQ(shape(*g.tensor(p + "attn_conv_base")), (S{256, 2, 2}));
    ASSERT_NE(g.tensor(p + "ffn_conv_proj.weight"), nullptr);
    EXPECT_EQ(shape(*g.tensor(p + "ffn_conv_proj.weight")), (S{256, 64}));
  }
  EXPECT_EQ(g.tensor("token_embd.weight"), nullptr);
  EXPECT_EQ(g.tensor("output.weight"), nullptr);
}

TEST(zoo_drafters, FixtureFilesHoldTheDocumentedRows) {
  const auto mtp = load_json("zoo-mtp.json"), df = load_json("zoo-dflash2.json");
  const std::size_t V = 4096, K = mtp["K"].get<std::size_t>();
  EXPECT_EQ(K, 3u);
  EXPECT_EQ(std::filesystem::file_size(kFixtures / "zoo-mtp.logits.bin"), mtp["cases"].size() * K * V * 4);
  std::size_t positions = 0;
  for (const auto& c : df["cases"]) {
    EXPECT_EQ(c["feature_rows_start"].get<std::size_t>(), positions);
    positions += c["ids"].size();
    EXPECT_EQ(c["drafts_argmax"].size(), 7u);
    EXPECT_EQ(c["drafts_selector"].size(), 7u);
  }
  EXPECT_EQ(std::filesystem::file_size(kFixtures / "zoo-dflash2.features.bin"),
            positions * df["feature_width"].get<std::size_t>() * 4);
  EXPECT_EQ(std::filesystem::file_size(kFixtures / "zoo-dflash2.logits.bin"), df["cases"].size() * 7 * V * 4);
}

// Every drafter context starts from the target's greedy next token; graft's forward pass must
// pick the same one, or the drafter fixtures do not describe graft's target.
TEST(zoo_drafters, GraftPicksEveryFixtureContextsNextToken) {
  Profile profile = Profile::builtin();
  profile.model = kTarget;
  profile.context = 256;
  profile.threads = 2;
  profile.kv.config.set("type", std::string("f32"));
  auto p = Pipeline::build(profile, 128);
  ASSERT_TRUE(p) << p.status().message();
  auto session = (*p)->new_session();
  ASSERT_TRUE(session) << session.status().message();
  for (const char* name : {"zoo-mtp.json", "zoo-dflash2.json"}) {
    const auto fx = load_json(name);  // (a range-for over a temporary's member would read it after it died)
    for (const auto& c : fx["cases"]) {
      const auto ids = c["ids"].get<std::vector<TokenId>>();
      std::vector<float> logits;
      SequenceBatch batch;
      batch.tokens = ids;
      ASSERT_TRUE((*session)->reset().ok());
      Status st = (*session)->forward(batch, logits);
      ASSERT_TRUE(st.ok()) << st.message();
      ASSERT_GE(logits.size(), 4096u);
      const float* last = logits.data() + logits.size() - 4096;
      const auto best = std::max_element(last, last + 4096) - last;
      EXPECT_EQ(best, c["next_token"].get<std::int64_t>()) << name << ": " << c["context"].get<std::string>();
    }
  }
}
