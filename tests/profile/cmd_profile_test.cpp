// `graft profile check` / `show` through the built binary: output and exit codes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/wait.h>

#include "profile/profile.hpp"
#include "temp_dir.hpp"

namespace graft {
namespace {

struct RunResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};

std::string slurp(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// Runs `graft <arguments>` (arguments already shell-quoted) with stdout and stderr captured.
RunResult graft(const test::TempDir& dir, const std::string& arguments) {
  const auto out = dir.path() / "stdout.txt", err = dir.path() / "stderr.txt";
  const std::string command = std::string("'") + GRAFT_EXE + "' " + arguments + " >'" + out.string() + "' 2>'" +
                              err.string() + "'";
  const int status = std::system(command.c_str());
  RunResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = slurp(out);
  r.err = slurp(err);
  return r;
}

TEST(profile_cli, CheckGoodProfilePrintsSummaryAndOk) {
  test::TempDir dir;
  const auto file = dir.write("good.toml", R"([model]
path = "m.gguf"
[kv]
store = "device"
type = "f32"
[sampling]
temperature = 0
)");
  const RunResult r = graft(dir, "profile check '" + file.string() + "' -c 2048");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("model:    " + (dir.path() / "m.gguf").string() + "\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("kv:       device (type)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sampling: temperature 0,"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("context:  2048 tokens"), std::string::npos) << r.out;  // the override applied
  EXPECT_NE(r.out.find("1 plugin key(s) checked against the plugins' declarations"), std::string::npos) << r.out;
  ASSERT_GE(r.out.size(), 3u);
  EXPECT_EQ(r.out.substr(r.out.size() - 3), "ok\n");
}

TEST(profile_cli, CheckBadProfilePrintsOneLineAndExits1) {
  test::TempDir dir;
  const auto file = dir.write("bad.toml", "[sampling]\ntop_k = \"many\"\n");
  const RunResult r = graft(dir, "profile check '" + file.string() + "'");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_EQ(r.err, file.string() + ":2:9: sampling.top_k: expected integer, got string\n");
}

TEST(profile_cli, UsageErrorsExit2) {
  test::TempDir dir;
  const RunResult missing = graft(dir, "profile check");
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(missing.err, "graft profile check: missing FILE (usage: graft profile check FILE [options])\n");
  EXPECT_EQ(graft(dir, "profile frobnicate").exit_code, 2);
  const RunResult bad_flag = graft(dir, "profile check x.toml --tmep 1");
  EXPECT_EQ(bad_flag.exit_code, 2);
  EXPECT_EQ(bad_flag.err,
            "graft profile check: command line: unrecognised option '--tmep'; did you mean '--temp'?\n");
  EXPECT_EQ(graft(dir, "profile --help").exit_code, 0);
}

TEST(profile_cli, ShowPrintsTomlThatLoadsBack) {
  test::TempDir dir;
  const RunResult r = graft(dir, "profile show --temp 0.25 -n 64 '--prompt=say \"hi\"'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto p = Profile::parse(r.out, "shown.toml");
  ASSERT_TRUE(p) << p.status().message() << "\n" << r.out;
  EXPECT_EQ(p->sampling.temperature, 0.25);
  EXPECT_EQ(p->max_tokens, 64);
  EXPECT_EQ(p->prompt, "say \"hi\"");
  EXPECT_EQ(p->context, Profile::builtin().context);
}

TEST(profile_cli, ShippedCpuProfileChecks) {
  test::TempDir dir;
  const RunResult r =
      graft(dir, std::string("profile check '") + GRAFT_SOURCE_DIR + "/profiles/cpu.toml'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("model:    (not set; pass --model)"), std::string::npos) << r.out;
}

// The tier profiles (profiles/gpu-*.toml) check like any other, their keys against the plugins
// they name, where the cuda plugin was built; and plan for their card on this machine, GPU or not
// (graft plan --memory), on a small hybrid model: the whole training context fits.
TEST(profile_cli, ShippedTierProfilesCheckAndPlan) {
  if (!std::filesystem::exists(std::filesystem::path(GRAFT_PLUGIN_DIR) / "libgraft_backend_cuda.so"))
    GTEST_SKIP() << "this build has no cuda plugin (no CUDA compiler at configure time)";
  test::TempDir dir;
  const std::string model = (dir.path() / "qwen35.gguf").string();
  ASSERT_EQ(graft(dir, "synth --preset qwen35-tiny --out '" + model + "'").exit_code, 0);
  for (const char* tier : {"gpu-8gb", "gpu-12gb", "gpu-16gb", "gpu-24gb", "gpu-80gb"}) {
    SCOPED_TRACE(tier);
    const std::string profile = std::string(GRAFT_SOURCE_DIR) + "/profiles/" + tier + ".toml";
    const RunResult checked = graft(dir, "profile check '" + profile + "'");
    EXPECT_EQ(checked.exit_code, 0) << checked.err;
    EXPECT_NE(checked.out.find("context:  auto (the largest that fits in memory)"), std::string::npos) << checked.out;
    const RunResult planned = graft(dir, "plan --profile '" + profile + "' --model '" + model + "' --memory 8GiB");
    EXPECT_EQ(planned.exit_code, 0) << planned.err << planned.out;
    EXPECT_NE(planned.out.find("device f16, context 2048 (auto), 1 sequence"), std::string::npos) << planned.out;
    EXPECT_NE(planned.out.find("(--memory 8GiB): fits"), std::string::npos) << planned.out;
    // ngram's index lives in system RAM beside the GPU's memory: counted there, at its bound.
    EXPECT_NE(planned.out.find("\n  drafter index (system RAM) "), std::string::npos) << planned.out;
    EXPECT_NE(planned.out.find("\n  system RAM: "), std::string::npos) << planned.out;
  }
}

}  // namespace
// Each tier profile planned for the models its header names, as synthetic files of their shapes
// (graft synth --shape-only: the real header and size, a sparse hole for the data): the model
// fits the card with the context its comment promises (docs/profiles.md has the table).
TEST(profile_cli, TierProfilesPlanTheModelsTheyAreFor) {
  if (!std::filesystem::exists(std::filesystem::path(GRAFT_PLUGIN_DIR) / "libgraft_backend_cuda.so"))
    GTEST_SKIP() << "this build has no cuda plugin (no CUDA compiler at configure time)";
  test::TempDir dir;
  struct Tier {
    const char* profile;
    const char* preset;
    const char* type;
    const char* memory;
    std::uint32_t at_least;  // tokens of context
  };
  for (const Tier& t : {Tier{"gpu-8gb", "qwen3-8b", "q1_0", "8GiB", 40960}, Tier{"gpu-12gb", "bonsai-27b", "q1_0", "12GiB", 65536},
                        Tier{"gpu-16gb", "bonsai-27b", "q1_0", "16GiB", 131072},
                        Tier{"gpu-24gb", "qwen36-27b", "q4_k", "24GiB", 131072},
                        Tier{"gpu-80gb", "qwen36-27b", "q8_0", "80GiB", 262144}}) {
    SCOPED_TRACE(t.profile);
    const std::string model = (dir.path() / (std::string(t.preset) + "-" + t.type + ".gguf")).string();
    if (!std::filesystem::exists(model)) {
      const RunResult made = graft(dir, std::string("synth --preset ") + t.preset + " --type " + t.type +
                                            " --shape-only --out '" + model + "'");
      ASSERT_EQ(made.exit_code, 0) << made.err;
      EXPECT_NE(made.out.find("(shapes only: the data is a sparse hole of zeros, for graft plan)"), std::string::npos);
    }
    const std::string profile = std::string(GRAFT_SOURCE_DIR) + "/profiles/" + t.profile + ".toml";
    const RunResult planned = graft(dir, "plan --profile '" + profile + "' --model '" + model + "' --memory " + t.memory);
    ASSERT_EQ(planned.exit_code, 0) << planned.err << planned.out;
    EXPECT_NE(planned.out.find(std::string("(--memory ") + t.memory + "): fits"), std::string::npos) << planned.out;
    const auto at = planned.out.find(", context ");
    ASSERT_NE(at, std::string::npos) << planned.out;
    const std::uint32_t context = static_cast<std::uint32_t>(std::stoul(planned.out.substr(at + 10)));
    EXPECT_GE(context, t.at_least) << planned.out;
  }
}

}  // namespace graft
