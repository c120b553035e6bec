// The memory planner (core/engine/memory_plan.hpp) against what the run then allocates: every
// store and type, an attention-only and a hybrid model, one sequence and several; `--ctx auto`;
// the refusal before loading; the size parser.
#include <gtest/gtest.h>

#include "engine/auto_profile.hpp"
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
      std::uint64_t file_bytes = 0;  // every tensor, as the load's prefault reads them
      for (const auto& t : (*p)->file().tensors()) file_bytes += t.bytes;
      EXPECT_EQ(weights->file_bytes, file_bytes);
      EXPECT_GE(weights->file_bytes, mem.weights) << "the matrices the forward pass reads are part of it";
      EXPECT_EQ(weights->prepared_bytes, mem.prepared);
      EXPECT_EQ(weights->released_bytes, mem.released);
      EXPECT_EQ(plan.item("weights")->bytes, file_bytes - mem.released + mem.prepared);
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

namespace {

// --profile auto's policy over a fake planner: a backend that cannot plan is skipped with its
// reason; the first KV cache that holds the whole training context wins, else the one that holds
// the most; what the command line gave is kept.
MemoryPlan fake_plan(std::uint32_t context, std::uint32_t limit, bool fits = true) {
  MemoryPlan p;
  p.context = context;
  p.context_limit = limit;
  p.budget = 1ull << 30;
  p.budget_source = "test memory";
  p.total = fits ? 1 : 2ull << 30;
  return p;
}

Expected<MemoryPlan> fake_planner(const Profile& p, std::uint32_t f16, std::uint32_t q8, std::uint32_t tq3) {
  if (p.backend.name == "cuda") return Status(Errc::unsupported, "backend 'cuda' is not usable: no device");
  const std::string kv = kv_label(p.kv);
  const std::uint32_t fitting = kv == "device f16" ? f16 : kv == "quant q8_0/q8_0" ? q8 : tq3;
  return fake_plan(p.context ? static_cast<std::uint32_t>(p.context) : fitting, 4096, p.context <= fitting);
}

TEST(AutoProfile, TheFirstCacheHoldingTheTrainingContextElseTheLongest) {
  Profile base = Profile::builtin();
  base.auto_choice = true;
  auto full = choose_profile(base, [](const Profile& p) { return fake_planner(p, 1000, 2000, 4096); });
  ASSERT_TRUE(full) << full.status().message();
  EXPECT_EQ(full->profile.backend.name, "cpu");
  EXPECT_EQ(kv_label(full->profile.kv), "quant q8_0/tq3");
  EXPECT_EQ(full->profile.context, 4096);
  EXPECT_FALSE(full->profile.auto_choice);
  EXPECT_EQ(full->why,
            "backend cpu (cuda: backend 'cuda' is not usable: no device), KV quant q8_0/tq3: the model's whole training "
            "context (4096 tokens) fits in 1.00 GiB (test memory)");
  auto f16 = choose_profile(base, [](const Profile& p) { return fake_planner(p, 4096, 4096, 4096); });
  EXPECT_EQ(kv_label(f16->profile.kv), "device f16") << "the largest cache first";
  auto most = choose_profile(base, [](const Profile& p) { return fake_planner(p, 1000, 3000, 2500); });
  EXPECT_EQ(kv_label(most->profile.kv), "quant q8_0/q8_0");
  EXPECT_EQ(most->profile.context, 3000);
  EXPECT_NE(most->why.find("3000 tokens fit in 1.00 GiB (test memory), the most of any KV cache (the training "
                           "context is 4096)"),
            std::string::npos)
      << most->why;

  Profile given = base;  // -ctv tq3 and --ctx 2048 on the command line
  given.kv = PluginChoice{"quant", {}, "", {}};
  given.kv.config.set("type_v", std::string("tq3"));
  given.locations["kv.store"] = "command line: --cache-type-v";
  given.context = 2048;
  given.locations["context.size"] = "command line: --ctx";
  auto kept = choose_profile(given, [](const Profile& p) { return fake_planner(p, 4096, 4096, 4096); });
  ASSERT_TRUE(kept);
  EXPECT_EQ(kv_label(kept->profile.kv), "quant f16/tq3");
  EXPECT_EQ(kept->profile.context, 2048);

  auto none = choose_profile(base, [](const Profile&) -> Expected<MemoryPlan> {
    return Status(Errc::out_of_memory, "no context fits");
  });
  ASSERT_FALSE(none);
  EXPECT_EQ(none.status().message(), "--profile auto: no backend can run the model here: (cuda: no context fits) (cpu: "
                                     "no context fits)");
}

// On this machine, for the zoo model: the CPU (the cuda backend has no device here, or was not
// built), the f16 cache, the model's whole training context.
TEST_F(MemoryPlanTest, ProfileAutoPlansTheZooOnTheCpu) {
  Profile p = Profile::builtin();
  p.model = zoo();
  p.auto_choice = true;
  auto plan = Pipeline::plan(p, 8);
  ASSERT_TRUE(plan) << plan.status().message();
  EXPECT_EQ(plan->context, 512u);
  EXPECT_EQ(plan->choice.rfind("backend cpu", 0), 0u) << plan->choice;
  EXPECT_NE(plan->choice.find("KV device f16: the model's whole training context (512 tokens) fits in"),
            std::string::npos)
      << plan->choice;
}

}  // namespace

namespace {

const std::filesystem::path kDFlash = std::filesystem::path(GRAFT_SOURCE_DIR) / "models/zoo-dflash2-2x256.gguf";

Profile with_drafters(Profile p) {
  p.speculative.enabled = true;
  Config dflash;
  dflash.set("model", kDFlash.string());
  p.drafters = {PluginChoice{"mtp", {}, "", {}}, PluginChoice{"ngram", {}, "", {}}, PluginChoice{"dflash2", dflash, "", {}}};
  return p;
}

}  // namespace

// The drafters' memory (core/speculative/drafter_plan.hpp; to the byte on a device:
// emulated_device_test.cpp): their KV caches in the profile's store, each the context plus its
// round's slots; the n-gram index's bound per token where the plan's memory is the host's; per
// sequence for --parallel; an auto context that leaves them room.
TEST_F(MemoryPlanTest, DraftersAreCountedPerSequenceAndLeaveRoomInAnAutoContext) {
  for (const char* kv : {"f16", "q8_0/tq3"}) {
    SCOPED_TRACE(kv);
    const Profile prof = with_drafters(profile(zoo(), kv, 256));
    auto p = Pipeline::build(prof, 32);
    ASSERT_TRUE(p) << p.status().message();
    const MemoryPlan& plan = (*p)->memory_plan();
    EXPECT_TRUE(plan.not_counted.empty()) << plan.table();
    for (const char* item : {"drafter weights", "drafter KV", "drafter buffers"})
      ASSERT_NE(plan.item(item), nullptr) << item << "\n" << plan.table();
    // The KV caches the drafters will ask the store for: mtp one layer of the target's heads for
    // the context + max_draft (3) + 1; dflash2 its file's layers for the context + its block.
    const ModelParams& t = (*p)->model().params();
    auto file = (*p)->open_gguf(kDFlash.string());
    ASSERT_TRUE(file) << file.status().message();
    const auto L = (*file)->get_int("dflash.block_count"), B = (*file)->get_int("dflash.block_size");
    const auto heads = (*file)->get_int("dflash.attention.head_count"), E = (*file)->get_int("dflash.embedding_length");
    const auto kvh = (*file)->get_int("dflash.attention.head_count_kv").value_or(*heads);
    const auto hd = (*file)->get_int("dflash.attention.key_length").value_or(*E / *heads);
    auto store_bytes = [&](KvGeometry g) -> std::uint64_t {
      auto s = (*p)->new_kv_store(g);
      EXPECT_TRUE(s) << s.status().message();
      return s ? (*s)->memory().device_bytes : 0;
    };
    const std::uint64_t mtp = store_bytes({1, t.n_head_kv, t.head_dim, t.head_dim, 256 + 3 + 1});
    const std::uint64_t dflash = store_bytes({std::uint32_t(*L), std::uint32_t(kvh), std::uint32_t(hd),
                                              std::uint32_t(hd), std::uint32_t(256 + *B)});
    const std::uint64_t index = 256 * (2 * 4 + 2 * 9 * 8 + 2 * 9 * 24 + 4 * 9 * 4);  // max_match 8: depth 9
    EXPECT_EQ(plan.item("drafter KV")->bytes, mtp + dflash + index) << plan.table();

    MemoryOptions server;
    server.parallel = 3;
    auto three = Pipeline::plan(prof, 32, server);
    ASSERT_TRUE(three) << three.status().message();
    EXPECT_EQ(three->item("drafter KV")->bytes, 3 * plan.item("drafter KV")->bytes);
    EXPECT_EQ(three->item("drafter buffers")->bytes, 3 * plan.item("drafter buffers")->bytes);
    // dflash2's file is shared; what a sequence binds again (mtp's head, the runners' blocks) is
    // a view of the file on the CPU for these types (no kernel copy): nothing more per sequence.
    EXPECT_EQ(three->item("drafter weights")->bytes, plan.item("drafter weights")->bytes);

    // With just the memory this plan takes, an auto context is 256 with the drafters, more without.
    MemoryOptions tight;
    tight.budget = plan.total;
    tight.budget_source = "test";
    Profile automatic = prof;
    automatic.context = 0;
    auto with = Pipeline::plan(automatic, 32, tight);
    ASSERT_TRUE(with) << with.status().message();
    EXPECT_EQ(with->context, 256u) << with->table();
    automatic.speculative.enabled = false;
    auto without = Pipeline::plan(automatic, 32, tight);
    ASSERT_TRUE(without) << without.status().message();
    EXPECT_GT(without->context, 256u) << without->table();
  }
}
