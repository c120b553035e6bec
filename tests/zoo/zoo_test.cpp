// The zoo target (models/zoo-qwen3-4x256.gguf, trained by tools/zoo) against the fixtures written
// by its PyTorch reference (float64, from the same f16-rounded weights): tokenizer ids on held-out
// text, logits at the first prompt positions, and 64-token greedy continuations.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "engine/pipeline.hpp"
#include "gguf/gguf_file.hpp"
#include "test_util.hpp"
#include "tokenizer/tokenizer.hpp"

using namespace graft;

namespace {

const std::filesystem::path kModel = std::filesystem::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";
const std::filesystem::path kFixtures = std::filesystem::path(GRAFT_SOURCE_DIR) / "tests" / "fixtures";

// graft computes with f16 weights and f32 activations/accumulators; the reference in float64 from
// the same f16 weights. Largest |difference| allowed, relative to max(1, largest |logit| of the row).
constexpr double kZooLogitTol = 2e-3;

std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

nlohmann::json fixture() { return nlohmann::json::parse(slurp(kFixtures / "zoo-qwen3-4x256.json")); }

std::vector<float> fixture_logits() {
  const std::string raw = slurp(kFixtures / "zoo-qwen3-4x256.logits.bin");
  std::vector<float> v(raw.size() / sizeof(float));
  std::memcpy(v.data(), raw.data(), v.size() * sizeof(float));
  return v;
}

std::unique_ptr<Pipeline> pipeline() {
  Profile profile = Profile::builtin();
  profile.model = kModel;
  profile.context = 256;
  profile.threads = 2;
  profile.kv.config.set("type", std::string("f32"));
  auto p = Pipeline::build(profile, 64);
  EXPECT_TRUE(p) << p.status().message();
  return p ? std::move(*p) : nullptr;
}

}  // namespace

TEST(zoo, TokenizerMatchesPythonOnHeldOutText) {
  auto file = gguf::File::open(kModel.string());
  ASSERT_TRUE(file) << file.status().message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok) << tok.status().message();
  const std::string text = slurp(kFixtures / "zoo-tokenizer-val.txt");
  ASSERT_GT(text.size(), 1000u);
  std::vector<TokenId> want;
  std::istringstream ids(slurp(kFixtures / "zoo-tokenizer-val.ids"));
  for (long id; ids >> id;) want.push_back(static_cast<TokenId>(id));
  TokenizeOptions opt;
  opt.add_special = false;
  opt.parse_special = false;
  auto got = (*tok)->encode(text, opt);
  ASSERT_TRUE(got) << got.status().message();
  ASSERT_EQ(got->size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_EQ((*got)[i], want[i]) << "token " << i;
}

TEST(zoo, LogitsMatchThePyTorchReference) {
  auto p = pipeline();
  ASSERT_TRUE(p);
  const auto fx = fixture();
  const auto rows = fixture_logits();
  const std::size_t V = p->model().params().n_vocab;
  double worst_rel = 0;
  ASSERT_EQ(V, fx["n_vocab"].get<std::size_t>());
  auto session = p->new_session();
  ASSERT_TRUE(session) << session.status().message();
  for (const auto& c : fx["cases"]) {
    const auto prompt = c["prompt_ids"].get<std::vector<TokenId>>();
    std::vector<float> logits;
    SequenceBatch batch;
    batch.tokens = prompt;
    batch.all_logits = true;
    ASSERT_TRUE((*session)->reset().ok());
    Status st = (*session)->forward(batch, logits);
    ASSERT_TRUE(st.ok()) << st.message();
    ASSERT_EQ(logits.size(), prompt.size() * V);
    std::size_t row = c["logit_rows_start"].get<std::size_t>();
    for (const std::size_t pos : c["logit_positions"].get<std::vector<std::size_t>>()) {
      ASSERT_LE((row + 1) * V, rows.size());
      const float* want = rows.data() + row * V;
      double spread = 0, worst = 0;
      for (std::size_t v = 0; v < V; ++v) spread = std::max(spread, std::fabs(double(want[v])));
      for (std::size_t v = 0; v < V; ++v) worst = std::max(worst, std::fabs(double(logits[pos * V + v]) - want[v]));
      EXPECT_LT(worst, kZooLogitTol * std::max(1.0, spread))
          << c["prompt"].get<std::string>() << " position " << pos << " spread " << spread;
      worst_rel = std::max(worst_rel, worst / std::max(1.0, spread));
      ++row;
    }
  }
  std::printf("zoo: worst logit difference %.3g of the row's largest |logit| (tolerance %.3g)\n", worst_rel,
              kZooLogitTol);
}

TEST(zoo, GreedyContinuationMatchesThePyTorchReference) {
  auto p = pipeline();
  ASSERT_TRUE(p);
  const auto fx = fixture();  // (a range-for over a temporary's member would read it after it died)
  for (const auto& c : fx["cases"]) {
    const auto prompt = c["prompt_ids"].get<std::vector<TokenId>>();
    const auto want = c["greedy_ids"].get<std::vector<TokenId>>();
    GenerationOptions greedy;
    greedy.max_tokens = static_cast<std::int64_t>(want.size());
    greedy.sampling.temperature = 0;
    std::vector<TokenId> got;
    GenerationStats stats;
    auto session = p->new_session();
    ASSERT_TRUE(session) << session.status().message();
    Status st = (*session)->generate(prompt, greedy, [&](TokenId id, std::string_view) { got.push_back(id); return true; },
                                     stats);
    ASSERT_TRUE(st.ok()) << st.message();
    EXPECT_EQ(got, want) << "prompt " << c["prompt"].get<std::string>();
  }
}
