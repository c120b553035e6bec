// The exit-status rule every command follows (README, "Exit status"): 0 success; 1 when the
// command could not do its job with what it was given (a file missing, unreadable or invalid, a
// plugin, a model the plugins cannot run, a KV cache the machine cannot hold); 2 when the command
// line itself is wrong (unknown command or option, a missing argument, a flag's value out of
// range). And what a new user hit: oversubscribed threads, a KV cache larger than memory.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <thread>

#include "test_util.hpp"


namespace {

class cli_exit : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = (dir_->path() / "m.gguf").string();
    // 8 layers x 8 KV heads x 64 dims: 16 KiB of f16 K/V per token, so 16M tokens need 256 GiB.
    auto r = run_command(std::string(GRAFT_EXE) +
                         " synth --arch llama --n-embd 512 --n-layer 8 --n-head 8 --n-head-kv 8 --n-ff 256 "
                         "--n-vocab 300 --ctx 512 --seed 5 --out " + model_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static CommandResult graft(const std::string& args) { return run_command(std::string(GRAFT_EXE) + " " + args); }
  // Lines of output other than the load progress ("loading weights: 100%").
  static int message_lines(const std::string& out) {
    int n = 0;
    for (std::size_t at = 0; at < out.size();) {
      const std::size_t end = out.find('\n', at);
      // Progress and the memory plan said on loading are not messages.
      if (out.compare(at, 16, "loading weights:") != 0 && out.compare(at, 12, "memory plan:") != 0) ++n;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return n;
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string model_;
};

TEST_F(cli_exit, UsageErrorsExitTwo) {
  const std::string m = " --model " + model_;
  const std::vector<std::string> usage_errors = {
      "frobnicate", "run" + m + " --tmep 1", "run" + m + " --temp 150", "run" + m + " -c 8",
      "run" + m + " --prompt-ids \"1 999\"", "bench" + m + " --reps 0", "perplexity" + m, "info",
      "plugins --bogus", "profile check", "tokenize" + m + " --bogus", "run" + m + " -p x --spec-policy \"\"",
      "run" + m + " -p x --spec-trace " + (dir_->path() / "trace.jsonl").string()};
  for (const std::string& args : usage_errors) {
    auto r = graft(args);
    EXPECT_EQ(r.exit_code, 2) << "graft " << args << "\n" << r.output;
    EXPECT_EQ(message_lines(r.output), 1) << "one line: " << r.output;
    EXPECT_EQ(r.output.back(), '\n');
  }
}

// graft serve's own flags are checked before anything loads, each with its one-line reason.
TEST_F(cli_exit, ServeFlagsOutOfRangeExitTwoWithTheReason) {
  const std::string m = "serve --model " + model_;
  const std::vector<std::pair<std::string, std::string>> cases = {
      {m + " --reasoning-budget -2", "graft serve: command line: --reasoning-budget: -2 is out of range: must be >= -1\n"},
      {m + " --thinking-eos maybe", "graft serve: command line: --thinking-eos: 'maybe' must be answer or stop\n"},
      {m + " --parallel 0", "graft serve: command line: --parallel: 0 is out of range: must be in 1..256\n"}};
  for (const auto& [args, message] : cases) {
    auto r = graft(args);
    EXPECT_EQ(r.exit_code, 2) << "graft " << args << "\n" << r.output;
    EXPECT_EQ(r.output, message);
  }
}

// A trace of speculative rounds asked for a run without drafters: the flag, not the file, is wrong.
TEST_F(cli_exit, ASpeculativeTraceWithoutDraftersIsAUsageError) {
  auto r = graft("run --model " + model_ + " -p x -n 2 --spec-trace " + (dir_->path() / "t.jsonl").string());
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_NE(r.output.find("graft run: --spec-trace needs speculative decoding (--draft LIST)\n"), std::string::npos)
      << r.output;
  EXPECT_FALSE(std::filesystem::exists(dir_->path() / "t.jsonl"));
}

TEST_F(cli_exit, RunTimeErrorsExitOne) {
  const std::string missing = (dir_->path() / "missing.gguf").string();
  const std::string no_prompt = (dir_->path() / "no-prompt.txt").string();
  const std::vector<std::string> run_time_errors = {
      "run --model " + missing + " -p x", "bench --model " + missing, "info " + missing,
      "run --profile " + missing + ".toml", "run --model " + model_ + " -f " + no_prompt,
      "perplexity --model " + model_ + " --file " + no_prompt};
  for (const std::string& args : run_time_errors) {
    auto r = graft(args);
    EXPECT_EQ(r.exit_code, 1) << "graft " << args << "\n" << r.output;
    EXPECT_EQ(message_lines(r.output), 1) << "one line: " << r.output;
    EXPECT_EQ(r.output.back(), '\n');
  }
}

TEST_F(cli_exit, MoreThreadsThanTheMachineHasAreClampedWithAMessage) {
  const unsigned hw = std::thread::hardware_concurrency();
  ASSERT_GT(hw, 0u);
  auto r = graft("run --model " + model_ + " -p x -n 1 -t 1000 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const std::string want = "command line: --threads: 1000 threads on a machine with " + std::to_string(hw) +
                           " hardware threads would oversubscribe it; using " + std::to_string(hw);
  EXPECT_NE(r.output.find(want), std::string::npos) << r.output;
}

TEST_F(cli_exit, AKvCacheLargerThanMemoryIsRefusedBeforeAllocating) {
  auto r = graft("run --model " + model_ + " -p x -n 1 -c 16777216");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_TRUE(std::regex_search(
      r.output, std::regex("graft run: command line: --ctx: the run needs 256\\.05 GiB \\(weights [0-9.]+ MiB \\+ KV cache "
                           "256\\.00 GiB \\+ workspace [0-9.]+ MiB\\) but .* has [0-9.]+ GiB: a context of at most [0-9]+ "
                           "tokens fits \\(--ctx [0-9]+ or --ctx auto\\); graft plan shows the whole plan\n$")))
      << r.output;
  EXPECT_EQ(r.output.find("loading weights"), std::string::npos) << "refused before loading";
}

TEST_F(cli_exit, TheZooModelOnTheDefaultProfileDrawsNoWarning) {
  const std::string zoo = std::string(GRAFT_SOURCE_DIR) + "/models/zoo-qwen3-4x256.gguf";
  auto r = graft("run --profile " + std::string(GRAFT_SOURCE_DIR) + "/profiles/cpu.toml --model " + zoo +
                 " -n 4 --seed 3 -p 'import os'");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_EQ(r.output.find("warn"), std::string::npos) << r.output;
}

}  // namespace

// Where the cuda plugin was built but the machine has no GPU (this project's machines, CI): it is
// listed with its reason, a profile asking for it stops with that reason (exit 1), and the default
// profile stays on the CPU.
TEST_F(cli_exit, ACudaProfileWithoutAGpuSaysWhy) {
  if (!std::filesystem::exists(std::filesystem::path(GRAFT_PLUGIN_DIR) / "libgraft_backend_cuda.so"))
    GTEST_SKIP() << "this build has no cuda plugin (no CUDA compiler at configure time)";
  auto listed = graft("plugins");
  ASSERT_EQ(listed.exit_code, 0) << listed.output;
  const std::size_t at = listed.output.find("libgraft_backend_cuda.so");
  ASSERT_NE(at, std::string::npos) << listed.output;
  const std::string device_line = listed.output.substr(at, listed.output.find('\n', listed.output.find('\n', at) + 1) - at);
  if (device_line.find("unavailable") == std::string::npos) GTEST_SKIP() << "a CUDA device is present: " << device_line;
  EXPECT_NE(device_line.find("device: unavailable: no CUDA device"), std::string::npos) << device_line;
  const auto profile = dir_->path() / "cuda.toml";
  std::ofstream(profile) << "[backend]\nname = \"cuda\"\n";
  auto r = graft("run --profile " + profile.string() + " --model " + model_ + " -p x -n 1");
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find("graft run: backend 'cuda' is not usable: no CUDA device"), std::string::npos) << r.output;
  EXPECT_EQ(message_lines(r.output), 1) << r.output;
  auto cpu = graft("run --model " + model_ + " -p x -n 1 --temp 0");
  EXPECT_EQ(cpu.exit_code, 0) << cpu.output;
}
