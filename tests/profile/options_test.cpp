// The shared command-line options, parsed by the real parser from argv-like vectors, applied on
// top of the built-in defaults or a --profile file.
#include <gtest/gtest.h>

#include "cli/options.hpp"
#include "temp_dir.hpp"

namespace graft::cli {
namespace {

po::options_description shared_options() {
  po::options_description desc("test");
  add_profile_options(desc);
  return desc;
}

// Parses and loads; the error message when either step fails.
Expected<Profile> load(const Args& args) {
  const auto desc = shared_options();
  auto vm = parse_options(args, desc);
  if (!vm) return vm.status();
  return load_profile_with_overrides(*vm);
}

std::string error_of(const Args& args) {
  auto p = load(args);
  return p ? "(loaded)" : p.status().message();
}

TEST(profile_options, EveryFlagALlamaCppUserWouldGuess) {
  const auto desc = shared_options();
  for (const char* name : {"profile", "model", "ctx", "n-predict", "temp", "top-k", "top-p", "min-p", "repeat-penalty",
                           "repeat-last-n", "presence-penalty", "seed", "threads", "prompt", "prompt-file", "plugin-dir"})
    EXPECT_NE(desc.find_nothrow(name, false), nullptr) << name;
  auto vm = parse_options({"-m", "x", "-c", "64", "-n", "1", "-t", "2", "-p", "hi", "-f", "y"}, desc);
  ASSERT_TRUE(vm) << vm.status().message();
  for (const char* name : {"model", "ctx", "n-predict", "threads", "prompt", "prompt-file"})
    EXPECT_EQ(vm->count(name), 1u) << name;
}

TEST(profile_options, OverridesApplyOnTheBuiltinDefaults) {
  auto p = load({"--temp", "0.2", "-c", "8192", "-n", "-1", "--seed", "-1", "-t", "4", "-m", "models/x.gguf",
                 "--top-k", "10", "--top-p", "0.9", "--min-p", "0", "--repeat-penalty", "1.1", "--repeat-last-n", "-1",
                 "--presence-penalty", "-0.5", "-p", "Hello there", "--plugin-dir", "a", "--plugin-dir=b"});
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_TRUE(p->source.empty());
  EXPECT_EQ(p->sampling.temperature, 0.2);
  EXPECT_EQ(p->context, 8192);
  EXPECT_EQ(p->max_tokens, -1);
  EXPECT_EQ(p->sampling.seed, -1);
  EXPECT_EQ(p->threads, 4);
  EXPECT_EQ(p->model, "models/x.gguf");  // command-line paths stay relative to the working directory
  EXPECT_EQ(p->sampling.top_k, 10);
  EXPECT_EQ(p->sampling.top_p, 0.9);
  EXPECT_EQ(p->sampling.min_p, 0.0);
  EXPECT_EQ(p->sampling.repeat_penalty, 1.1);
  EXPECT_EQ(p->sampling.repeat_last_n, -1);
  EXPECT_EQ(p->sampling.presence_penalty, -0.5);
  EXPECT_EQ(p->prompt, "Hello there");
  EXPECT_EQ(p->plugin_dirs, (std::vector<std::filesystem::path>{"a", "b"}));
  EXPECT_EQ(p->where("sampling.temperature"), "command line: --temp");
  EXPECT_EQ(p->where("context.size"), "command line: --ctx");
}

TEST(profile_options, OverridesWinOverTheProfileFileAndKeepTheRest) {
  test::TempDir dir;
  const auto file = dir.write("p.toml", R"(plugin_dirs = ["plugins"]
[model]
path = "m.gguf"
[sampling]
temperature = 0.5
top_k = 7
)");
  auto p = load({"--profile", file.string(), "--temp", "0.1", "--plugin-dir", "/cli/plugins"});
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->source, file);
  EXPECT_EQ(p->sampling.temperature, 0.1);
  EXPECT_EQ(p->sampling.top_k, 7);
  EXPECT_EQ(p->model, dir.path() / "m.gguf");
  // Command-line plugin folders are searched first.
  EXPECT_EQ(p->plugin_dirs, (std::vector<std::filesystem::path>{"/cli/plugins", dir.path() / "plugins"}));
  EXPECT_EQ(p->where("sampling.top_k"), file.string() + ":6:1");
}

TEST(profile_options, OutOfRangeUsesTheProfileMessageWithTheFlagAsSource) {
  EXPECT_EQ(error_of({"--temp", "150"}), "command line: --temp: sampling.temperature = 150 is out of range: must be in 0..100");
  EXPECT_EQ(error_of({"-c", "8"}), "command line: --ctx: context.size = 8 is out of range: must be in 16..16777216");
  EXPECT_EQ(error_of({"--seed", "-2"}), "command line: --seed: sampling.seed = -2 is out of range: must be >= -1");
  EXPECT_EQ(error_of({"--top-p", "nan"}), "command line: --top-p: sampling.top_p = nan is out of range: must be in 0..1");
}

TEST(profile_options, BadCommandLinesAreOneLine) {
  EXPECT_EQ(error_of({"--tmp", "1"}), "command line: unrecognised option '--tmp'; did you mean '--temp'?");
  EXPECT_EQ(error_of({"--ctx", "abc"}), "command line: --ctx: 'abc' is neither an integer nor \"auto\"");
  EXPECT_EQ(error_of({"--ctx", "8"}), "command line: --ctx: context.size = 8 is out of range: must be in 16..16777216");
  EXPECT_EQ(error_of({"-n", "abc"}), "command line: the argument ('abc') for option '--n-predict' is invalid");
  EXPECT_EQ(error_of({"--te", "1"}).substr(0, 35), "command line: unrecognised option '");  // no prefix guessing
  EXPECT_EQ(error_of({"extra"}).substr(0, 14), "command line: ");
  EXPECT_EQ(error_of({"--model", ""}), "command line: --model: must not be empty");
}

TEST(profile_options, PromptAndPromptFile) {
  test::TempDir dir;
  const auto prompt = dir.write("prompt.txt", "line one\nline two\n");
  auto p = load({"-f", prompt.string()});
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->prompt, "line one\nline two");  // the editor's final newline dropped, the inner one kept
  EXPECT_EQ(p->where("generation.prompt"), "command line: --prompt-file");

  EXPECT_EQ(error_of({"-p", "x", "-f", prompt.string()}), "command line: --prompt and --prompt-file both given; use one");
  const auto missing = dir.path() / "nope.txt";
  EXPECT_EQ(error_of({"--prompt-file", missing.string()}),
            "command line: --prompt-file: cannot read '" + missing.string() + "': No such file or directory");
}

TEST(profile_options, ProfileErrorsPassThrough) {
  test::TempDir dir;
  const auto file = dir.write("bad.toml", "[sampling]\ntemperature = -1\n");
  EXPECT_EQ(error_of({"--profile", file.string()}),
            file.string() + ":2:15: sampling.temperature = -1 is out of range: must be in 0..100");
}

}  // namespace
}  // namespace graft::cli

namespace graft::cli {
namespace {

TEST(profile_options, DraftModelGoesToItsDrafter) {
  auto p = load({"--draft", "ngram,dflash2", "--draft-model", "models/d.gguf"});
  ASSERT_TRUE(p) << p.status().message();
  ASSERT_EQ(p->drafters.size(), 2u);
  EXPECT_FALSE(p->drafters[0].config.has("model"));
  EXPECT_EQ(p->drafters[1].config.get_string("model").value_or(""), "models/d.gguf");
  EXPECT_EQ(p->drafters[1].key_locations.at("model"), "command line: --draft-model");
  // NAME=FILE reaches another drafter.
  p = load({"--draft", "mine", "--draft-model", "mine=x.gguf"});
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->drafters[0].config.get_string("model").value_or(""), "x.gguf");

  EXPECT_EQ(error_of({"--draft", "ngram", "--draft-model", "d.gguf"}),
            "command line: --draft-model: no drafter 'dflash2' to give d.gguf to; name it in --draft (e.g. --draft "
            "ngram,dflash2)");
  EXPECT_EQ(error_of({"--draft", "ngram", "--draft-model", "=d.gguf"}),
            "command line: --draft-model: '=d.gguf' wants FILE or NAME=FILE");
}

TEST(profile_options, ADrafterModelInAProfileIsRelativeToIt) {
  test::TempDir dir;
  const auto profile = dir.write("p.toml", "[[drafter]]\nname = \"dflash2\"\nmodel = \"sub/d.gguf\"\n");
  auto p = load({"--profile", profile.string()});
  ASSERT_TRUE(p) << p.status().message();
  ASSERT_EQ(p->drafters.size(), 1u);
  EXPECT_EQ(p->drafters[0].config.get_string("model").value_or(""), (dir.path() / "sub/d.gguf").string());
}

}  // namespace
}  // namespace graft::cli
