// The memory planner (core/engine/memory_plan.hpp) against what the run then allocates: every
// store and type, an attention-only and a hybrid model, one sequence and several; `--ctx auto`;
// the refusal before loading; the size parser.
#include <gtest/gtest.h>

#include "engine/memory_plan.hpp"
#include "engine/pipeline.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

class MemoryPlanTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    hybrid_ = dir_->path() / "qwen35.gguf";
    auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --out " + hybrid_.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static Profile profile(const std::filesystem::path& model, const std::string& kv, std::int64_t context) {
    Profile p = Profile::builtin();
    p.model = model;
    p.context = context;
    p.locations["context.size"] = "test";
    p.threads = 1;
    const auto slash = kv.find('/');
    if (slash != std::string::npos) {
      p.kv.name = "quant";
      p.kv.config.set("type_k", kv.substr(0, slash));
      p.kv.config.set("type_v", kv.substr(slash + 1));
    } else {
      p.kv.config.set("type", kv);
    }
    return p;
  }
  static std::filesystem::path zoo() { return std::filesystem::path(GRAFT_SOURCE_DIR) / "models/zoo-qwen3-4x256.gguf"; }

  static TempDir* dir_;
  static std::filesystem::path hybrid_;
};
TempDir* MemoryPlanTest::dir_ = nullptr;
std::filesystem::path MemoryPlanTest::hybrid_;

// The plan made before loading equals the memory the loaded run reports: the KV cache, the
// recurrent state (with and without its checkpoints), the workspace and the weights (file bytes,
// copies, pages given back) to the byte.
TEST_F(MemoryPlanTest, ThePlanIsWhatTheRunThenHolds) {
  for (const auto& model : {zoo(), hybrid_})
    for (const char* kv : {"f16", "f32", "q8_0/q8_0", "q8_0/tq3", "q4_0/tq3"}) {
      SCOPED_TRACE(model.filename().string() + " " + kv);
      auto p = Pipeline::build(profile(model, kv, 256), 8);
      ASSERT_TRUE(p) << p.status().message();
      const MemoryPlan& plan = (*p)->memory_plan();
      auto session = (*p)->new_session();
      ASSERT_TRUE(session) << session.status().message();
      const MemoryReport mem = (*p)->memory(**session);
      EXPECT_EQ(plan.context, 256u);
      EXPECT_EQ(plan.item("KV cache")->bytes, mem.kv);
      EXPECT_EQ(plan.item("workspace")->bytes, mem.scratch);
      auto weights = Model::plan_weights((*p)->file(), (*p)->host(), (*p)->backend());
      ASSERT_TRUE(weights);
      EXPECT_EQ(weights->file_bytes, mem.weights);
      EXPECT_EQ(weights->prepared_bytes, mem.prepared);
      EXPECT_EQ(weights->released_bytes, mem.released);
      EXPECT_EQ(plan.item("weights")->bytes, mem.weights - mem.released + mem.prepared);
      const bool hybrid = model == hybrid_;
      ASSERT_EQ(plan.item("recurrent state") != nullptr, hybrid);
      if (!hybrid) continue;
      EXPECT_EQ(plan.item("recurrent state")->bytes, mem.state) << "no checkpoint is held yet";
      // Prompt pieces of 8 tokens leave a checkpoint each, up to the 4 planned.
      std::vector<TokenId> prompt(48);
      for (std::size_t i = 0; i < prompt.size(); ++i) prompt[i] = static_cast<TokenId>(10 + i);
      ASSERT_TRUE((*session)->append(prompt).ok());
      ASSERT_EQ((*session)->checkpoints().size(), 4u);
      EXPECT_EQ(plan.item("recurrent state")->bytes + plan.item("state checkpoints")->bytes,
                (*p)->memory(**session).state);
    }
}

// N sequences: N KV caches, states and checkpoint sets; one workspace when they share it (the
// server), N otherwise. The server's sessions, made as it makes them, hold exactly that.
TEST_F(MemoryPlanTest, ParallelSequencesAreCountedEach) {
  const Profile prof = profile(hybrid_, "q8_0/tq3", 128);
  auto one = Pipeline::plan(prof, 16);
  ASSERT_TRUE(one) << one.status().message();
  MemoryOptions server;
  server.parallel = 3;
  server.shared_workspace = true;
  auto three = Pipeline::plan(prof, 16, server);
  ASSERT_TRUE(three) << three.status().message();
  for (const char* item : {"KV cache", "recurrent state", "state checkpoints"})
    EXPECT_EQ(three->item(item)->bytes, 3 * one->item(item)->bytes) << item;
  EXPECT_EQ(three->item("workspace")->bytes, one->item("workspace")->bytes);
  EXPECT_EQ(three->item("weights")->bytes, one->item("weights")->bytes);
  MemoryOptions apart = server;
  apart.shared_workspace = false;
  auto own = Pipeline::plan(prof, 16, apart);
  ASSERT_TRUE(own);
  EXPECT_EQ(own->item("workspace")->bytes, 3 * one->item("workspace")->bytes);

  auto p = Pipeline::build(prof, 16, {}, {}, server);
  ASSERT_TRUE(p) << p.status().message();
  auto ws = (*p)->model().new_workspace(16);
  ASSERT_TRUE(ws);
  const std::shared_ptr<Workspace> shared(std::move(*ws));
  std::uint64_t kv = 0, state = 0;
  for (int i = 0; i < 3; ++i) {
    auto s = (*p)->new_session(shared);
    ASSERT_TRUE(s);
    const MemoryReport m = (*p)->memory(**s);
    kv += m.kv;
    state += m.state;
  }
  EXPECT_EQ(three->item("KV cache")->bytes, kv);
  EXPECT_EQ(three->item("recurrent state")->bytes, state);
  EXPECT_EQ(three->item("workspace")->bytes, shared->bytes());
}

// context 0 ("auto"): the largest multiple of 256 (16 below 256) that fits the memory given, up to
// the model's training context; none fitting is an error; a plan over the memory is refused by
// build() before the model is loaded, with the plan and what to change.
TEST_F(MemoryPlanTest, AutoContextAndTheRefusal) {
  Profile prof = profile(zoo(), "f16", 0);
  MemoryOptions memory;
  memory.budget = 1ull << 40;
  memory.budget_source = "test";
  auto roomy = Pipeline::plan(prof, 8, memory);
  ASSERT_TRUE(roomy) << roomy.status().message();
  EXPECT_TRUE(roomy->context_auto);
  EXPECT_EQ(roomy->context, 512u) << "the zoo model was trained on 512 tokens";
  const std::uint64_t fixed = roomy->total - roomy->item("KV cache")->bytes, per_token = roomy->kv_per_token;
  memory.budget = fixed + per_token * 300;
  auto tight = Pipeline::plan(prof, 8, memory);
  ASSERT_TRUE(tight);
  EXPECT_EQ(tight->context, 256u);
  EXPECT_TRUE(tight->fits());
  memory.budget = fixed + per_token * 100;
  EXPECT_EQ(Pipeline::plan(prof, 8, memory)->context, 96u);
  memory.budget = fixed - 1;
  auto none = Pipeline::plan(prof, 8, memory);
  ASSERT_FALSE(none);
  EXPECT_NE(none.status().message().find("no context fits: the weights, state and workspaces alone take"),
            std::string::npos)
      << none.status().message();

  prof.context = 512;
  memory.budget = fixed + per_token * 300;
  auto refused = Pipeline::build(prof, 8, {}, {}, memory);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), Errc::out_of_memory);
  const std::string said = refused.status().message();
  EXPECT_NE(said.find("the run needs "), std::string::npos) << said;
  EXPECT_EQ(said.find('\n'), std::string::npos) << "one line";
  EXPECT_NE(said.find("a context of at most 256 tokens fits (--ctx 256 or --ctx auto)"), std::string::npos) << said;
}

TEST(MemoryPlanSizes, ByteSizesParseWithBinaryUnits) {
  EXPECT_EQ(*parse_byte_size("16GiB"), 16ull << 30);
  EXPECT_EQ(*parse_byte_size("16 G"), 16ull << 30);
  EXPECT_EQ(*parse_byte_size("512MiB"), 512ull << 20);
  EXPECT_EQ(*parse_byte_size("1.5g"), 3ull << 29);
  EXPECT_EQ(*parse_byte_size("4096"), 4096u);
  for (const char* bad : {"", "GiB", "-1G", "12 parsecs", "1e30", "0"}) {
    auto r = parse_byte_size(bad);
    ASSERT_FALSE(r) << bad;
    EXPECT_EQ(r.status().message(), "'" + std::string(bad) +
                                        "' is not a size: a number with an optional unit, e.g. 16GiB, 512MiB, 1.5G "
                                        "(K, M, G, T: powers of 1024)");
  }
}

}  // namespace
