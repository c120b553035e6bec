// Bad input to speculation: each is one line and a clear exit status, or a skipped round with a
// warning; never a crash, and never an output other than plain decoding's.
#include "zoo_test_util.hpp"

using namespace zoo;

namespace {

std::string graft_run(const std::string& args) {
  return std::string(GRAFT_EXE) + " run -m " + kTarget.string() + " -c 512 -t 1 --temp 0 " + args;
}

// The generated ids of a `graft run --json` output.
std::vector<TokenId> ids_of(const std::string& output) {
  const auto start = output.find('{');
  if (start == std::string::npos) return {};
  const auto j = nlohmann::json::parse(output.substr(start), nullptr, false);
  if (j.is_discarded()) return {};
  return j["generated_ids"].get<std::vector<TokenId>>();
}

}  // namespace

TEST(SpeculativeErrors, UnknownDrafterIsOneLine) {
  auto r = run_command(graft_run("-p 'def f(x):' -n 8 --draft nosuch"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("graft run: "), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("libgraft_drafter_nosuch.so"), std::string::npos) << r.output;
}

TEST(SpeculativeErrors, DraftFlagErrorsAreUsageErrors) {
  auto both = run_command(graft_run("-p x -n 4 --draft ngram --no-draft"));
  EXPECT_EQ(both.exit_code, 2) << both.output;
  EXPECT_NE(both.output.find("graft run: command line: --draft and --no-draft both given; use one"), std::string::npos)
      << both.output;
  auto empty = run_command(graft_run("-p x -n 4 --draft ngram,,mtp"));
  EXPECT_EQ(empty.exit_code, 2) << empty.output;
  EXPECT_NE(empty.output.find("graft run: command line: --draft: 'ngram,,mtp' has an empty drafter name"),
            std::string::npos)
      << empty.output;
  auto twice = run_command(graft_run("-p x -n 4 --draft ngram,ngram"));
  EXPECT_EQ(twice.exit_code, 2) << twice.output;
  EXPECT_NE(twice.output.find("graft run: command line: --draft: drafter 'ngram' is named twice"), std::string::npos)
      << twice.output;
}

TEST(SpeculativeErrors, DrafterKeysOutOfRangePointAtTheProfileLine) {
  TempDir dir;
  const auto profile = dir.path() / "p.toml";
  std::ofstream(profile) << "[speculative]\nenabled = true\n\n[[drafter]]\nname = \"ngram\"\nmax_match = 100\n";
  auto r = run_command(graft_run("--profile " + profile.string() + " -p x -n 4"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(profile.string() + ":6:"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("max_match"), std::string::npos) << r.output;
}

TEST(SpeculativeErrors, MtpOnAFileWithoutNextnNamesTheFile) {
  TempDir dir;
  const auto model = dir.path() / "plain.gguf";
  auto made = run_command(std::string(GRAFT_EXE) + " synth --arch qwen3 --n-embd 64 --n-layer 2 --n-head 2 "
                          "--n-head-kv 1 --n-ff 128 --n-vocab 300 --seed 3 --out " + model.string());
  ASSERT_EQ(made.exit_code, 0) << made.output;
  auto r = run_command(std::string(GRAFT_EXE) + " run -m " + model.string() + " -p x -n 4 --draft mtp");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("graft run: command line: --draft: drafter 'mtp': " + model.string() +
                          ": no MTP (nextn) block to draft with: qwen3.nextn_predict_layers is 0 or absent\n"),
            std::string::npos)
      << r.output;
}

TEST(SpeculativeErrors, MaxNodesBeyondTheBatchIsOneLine) {
  auto r = run_command(graft_run("-p x -n 4 --draft ngram -b 8"));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("graft run: built-in profile: speculative.max_nodes = 16 needs verify passes of 17 rows, "
                          "but a forward pass holds 8 (--batch): lower max_nodes or raise --batch\n"),
            std::string::npos)
      << r.output;
}

// Each way a drafter plugin can misbehave leaves the output exactly plain greedy's.
TEST(SpeculativeErrors, MisbehavingDrafterNeverChangesTheOutput) {
  const std::string prompt = "-p 'def parse(self, text):' -n 64 --json";
  auto plain = run_command(graft_run(prompt + " --no-draft"), false);
  ASSERT_EQ(plain.exit_code, 0) << plain.output;
  const auto want = ids_of(plain.output);
  ASSERT_EQ(want.size(), 64u);
  TempDir dir;
  struct Mode {
    const char* mode;
    const char* warning;  // expected on stderr ("" = none)
  };
  for (const Mode m : {Mode{"honest", ""},
                       Mode{"throw_propose", "drafter 'chaos' failed in propose: exception: propose exploded; its "
                                             "proposal is skipped"},
                       Mode{"error_propose", "drafter 'chaos' failed in propose: propose failed on purpose"},
                       Mode{"bad_parent", "drafter 'chaos' proposed an invalid tree (a parent does not precede its "
                                          "child); the proposal is skipped"},
                       Mode{"bad_token", "drafter 'chaos' proposed an invalid tree (a token id is outside the "
                                         "vocabulary)"},
                       Mode{"too_many", "drafter 'chaos' proposed an invalid tree (it has more nodes than max_nodes)"},
                       Mode{"too_deep", "drafter 'chaos' proposed an invalid tree (a node is deeper than max_depth)"},
                       Mode{"throw_begin", "drafter 'chaos' failed in begin: exception: begin exploded; disabled "
                                           "for this sequence (output is unaffected)"},
                       Mode{"error_accept", "drafter 'chaos' failed in accept: accept failed on purpose; disabled"},
                       Mode{"throw_accept", "drafter 'chaos' failed in accept: unknown exception; disabled"},
                       Mode{"throw_needs", "drafter 'chaos' failed in needs(): exception: needs exploded; disabled for "
                                           "this sequence (output is unaffected)"}}) {
    const auto profile = dir.path() / (std::string(m.mode) + ".toml");
    std::ofstream(profile) << "plugin_dirs = [\"" << CHAOS_PLUGIN_DIR << "\"]\n[speculative]\nenabled = true\n\n"
                           << "[[drafter]]\nname = \"chaos\"\nmode = \"" << m.mode << "\"\n";
    auto r = run_command(graft_run("--profile " + profile.string() + " " + prompt));
    EXPECT_EQ(r.exit_code, 0) << m.mode << ": " << r.output;
    EXPECT_EQ(ids_of(r.output), want) << m.mode;
    if (*m.warning) EXPECT_NE(r.output.find(m.warning), std::string::npos) << m.mode << ": " << r.output;
    else EXPECT_EQ(r.output.find("drafter 'chaos' failed"), std::string::npos) << r.output;
    // It does not say what memory it holds (DrafterFactory::memory): the plan says so.
    EXPECT_NE(r.output.find("not counted: drafter 'chaos' (this drafter does not report its memory)"), std::string::npos)
        << r.output;
  }
  for (const char* mode : {"throw_create", "error_create", "bad_tap"}) {
    const auto profile = dir.path() / (std::string(mode) + ".toml");
    std::ofstream(profile) << "plugin_dirs = [\"" << CHAOS_PLUGIN_DIR << "\"]\n[speculative]\nenabled = true\n\n"
                           << "[[drafter]]\nname = \"chaos\"\nmode = \"" << mode << "\"\n";
    auto r = run_command(graft_run("--profile " + profile.string() + " " + prompt));
    EXPECT_EQ(r.exit_code, 1) << mode << ": " << r.output;
    const std::string want = std::string(mode) == "throw_create"   ? "drafter 'chaos': exception: create exploded"
                             : std::string(mode) == "error_create" ? "drafter 'chaos': this target is not for me"
                                                                   : "drafter 'chaos' asks for hidden-state tap 99, but the "
                                                                     "model has taps 0..4 (layer inputs, then the output)";
    EXPECT_NE(r.output.find("graft run: " + want + "\n"), std::string::npos) << r.output;
  }
}

TEST(SpeculativeStatsJson, RunJsonReportsRoundsTokensPerRoundAndDrafters) {
  auto r = run_command(graft_run("-p 'import os\nimport sys\n' -n 64 --json --draft ngram,mtp"), false);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = nlohmann::json::parse(r.output);
  const auto& s = j["stats"]["speculative"];
  ASSERT_TRUE(s.is_object()) << r.output;
  EXPECT_GT(s["rounds"].get<int>(), 0);
  EXPECT_GE(s["tokens_per_round"].get<double>(), 1.0);
  EXPECT_TRUE(s["drafters"].contains("ngram"));
  EXPECT_TRUE(s["drafters"].contains("mtp"));
  EXPECT_TRUE(s["seconds"].contains("verify"));
  EXPECT_GT(j["stats"]["decode_tokens_per_second"].get<double>(), 0);
  // Tokens per round times rounds: every emitted token after the first came from a round.
  EXPECT_NEAR(s["tokens_per_round"].get<double>() * s["rounds"].get<double>(),
              j["stats"]["generated_tokens"].get<double>() - 1, 0.5);
}
