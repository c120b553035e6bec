// Profiles that load: values land in the right fields, plugin keys in the right Config with their
// locations, relative paths resolve against the profile's folder, defaults hold.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "profile/profile.hpp"
#include "profile/profile_writer.hpp"
#include "temp_dir.hpp"

namespace graft {
namespace {

TEST(profile_parse, EverySectionFillsItsFields) {
  const char* toml = R"(plugin_dirs = ["/opt/plugins"]
[model]
path = "/models/m.gguf"
[backend]
name = "cuda"
threads = 6
[kv]
store = "quant"
[speculative]
enabled = true
max_nodes = 32
max_depth = 7
[[drafter]]
name = "ngram"
[sampling]
temperature = 0
top_k = 5
top_p = 0.5
min_p = 0.1
repeat_penalty = 1.1
repeat_last_n = -1
presence_penalty = 0.5
seed = 42
[context]
size = 8192
max_tokens = -1
[generation]
prompt = "Hello"
)";
  auto p = Profile::parse(toml, "/etc/graft/p.toml");
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->source, "/etc/graft/p.toml");
  EXPECT_EQ(p->plugin_dirs, std::vector<std::filesystem::path>{"/opt/plugins"});
  EXPECT_EQ(p->model, "/models/m.gguf");
  EXPECT_EQ(p->backend.name, "cuda");
  EXPECT_EQ(p->threads, 6);
  EXPECT_EQ(p->kv.name, "quant");
  EXPECT_TRUE(p->speculative.enabled);
  EXPECT_EQ(p->speculative.max_nodes, 32);
  EXPECT_EQ(p->speculative.max_depth, 7);
  ASSERT_EQ(p->drafters.size(), 1u);
  EXPECT_EQ(p->drafters[0].name, "ngram");
  EXPECT_EQ(p->sampling.temperature, 0.0);  // an integer is accepted for a real
  EXPECT_EQ(p->sampling.top_k, 5);
  EXPECT_EQ(p->sampling.top_p, 0.5);
  EXPECT_EQ(p->sampling.min_p, 0.1);
  EXPECT_EQ(p->sampling.repeat_penalty, 1.1);
  EXPECT_EQ(p->sampling.repeat_last_n, -1);
  EXPECT_EQ(p->sampling.presence_penalty, 0.5);
  EXPECT_EQ(p->sampling.seed, 42);
  EXPECT_EQ(p->context, 8192);
  EXPECT_EQ(p->max_tokens, -1);
  EXPECT_EQ(p->prompt, "Hello");
  EXPECT_EQ(p->where("sampling.seed"), "/etc/graft/p.toml:23:1");
  EXPECT_EQ(p->where("backend.threads"), "/etc/graft/p.toml:6:1");
}

TEST(profile_parse, PluginKeysGoToConfigWithLocations) {
  const char* toml = R"([backend]
name = "cpu"
threads = 4
numa = true

[[drafter]]
name = "ngram"
min_match = 4
lookups = [16, 8, 4]

[[drafter]]
  name = "mix"
  weights = [1, 0.5]
  policy = "bandit"
  tags = []
[kv]
bits = 2.5
)";
  auto p = Profile::parse(toml, "p.toml");
  ASSERT_TRUE(p) << p.status().message();
  // Fixed keys stay out of the plugin's Config.
  EXPECT_FALSE(p->backend.config.has("name"));
  EXPECT_FALSE(p->backend.config.has("threads"));
  EXPECT_EQ(p->threads, 4);
  EXPECT_EQ(p->backend.config.get_bool("numa"), true);
  EXPECT_EQ(p->backend.location, "p.toml:1:1");
  EXPECT_EQ(p->backend.key_locations.at("numa"), "p.toml:4:1");

  ASSERT_EQ(p->drafters.size(), 2u);
  const auto& ngram = p->drafters[0];
  EXPECT_EQ(ngram.name, "ngram");
  EXPECT_EQ(ngram.config.get_int("min_match"), 4);
  EXPECT_EQ(ngram.config.get_int_list("lookups"), (std::vector<std::int64_t>{16, 8, 4}));
  EXPECT_EQ(ngram.location, "p.toml:6:1");
  EXPECT_EQ(ngram.key_locations.at("lookups"), "p.toml:9:1");

  const auto& mix = p->drafters[1];
  EXPECT_EQ(mix.name, "mix");
  EXPECT_EQ(mix.config.get_real_list("weights"), (std::vector<double>{1.0, 0.5}));  // mixed numbers: reals
  EXPECT_EQ(mix.config.get_string("policy"), "bandit");
  EXPECT_EQ(mix.config.get_string_list("tags"), std::vector<std::string>{});
  EXPECT_EQ(mix.key_locations.at("weights"), "p.toml:13:3");
  EXPECT_EQ(p->where("drafter[1].name"), "p.toml:12:3");

  EXPECT_EQ(p->kv.name, "device");  // default kept: the table only had a plugin key
  EXPECT_EQ(p->kv.config.get_real("bits"), 2.5);
  EXPECT_EQ(p->kv.location, "p.toml:16:1");
}

TEST(profile_parse, RelativePathsResolveAgainstTheProfileFolder) {
  const char* toml = R"(plugin_dirs = ["plugins", "../shared/plugins", "/abs/plugins"]
[model]
path = "../models/./m.gguf"
)";
  auto p = Profile::parse(toml, "/work/cfg/profiles/p.toml");
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->model, "/work/cfg/models/m.gguf");
  EXPECT_EQ(p->plugin_dirs, (std::vector<std::filesystem::path>{"/work/cfg/profiles/plugins",
                                                                "/work/cfg/shared/plugins", "/abs/plugins"}));
  // A profile named without a folder resolves against the working directory, i.e. stays relative.
  auto here = Profile::parse("[model]\npath = \"m.gguf\"\n", "p.toml");
  ASSERT_TRUE(here);
  EXPECT_EQ(here->model, "m.gguf");
}

TEST(profile_parse, LoadResolvesAgainstTheFilesFolder) {
  test::TempDir dir;
  const auto file = dir.write("sub/p.toml", "[model]\npath = \"m.gguf\"\n");
  auto p = Profile::load(file);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->model, dir.path() / "sub" / "m.gguf");
  EXPECT_EQ(p->source, file);
}

TEST(profile_parse, BuiltinDefaults) {
  const Profile p = Profile::builtin();
  EXPECT_TRUE(p.source.empty());
  EXPECT_TRUE(p.model.empty());
  EXPECT_EQ(p.backend.name, "cpu");
  EXPECT_EQ(p.kv.name, "device");
  EXPECT_TRUE(p.drafters.empty());
  EXPECT_FALSE(p.speculative.enabled);
  EXPECT_EQ(p.sampling.temperature, 0.8);
  EXPECT_EQ(p.sampling.seed, -1);
  EXPECT_EQ(p.context, 4096);
  EXPECT_EQ(p.max_tokens, 256);
  EXPECT_EQ(p.threads, 0);
  EXPECT_EQ(p.where("sampling.temperature"), "built-in profile");
}

TEST(profile_parse, EmptyFileGivesTheBuiltinDefaults) {
  auto p = Profile::parse("# nothing\n", "empty.toml");
  ASSERT_TRUE(p);
  Profile expected = Profile::builtin();
  expected.source = "empty.toml";
  EXPECT_EQ(to_toml(*p), to_toml(expected));
  EXPECT_EQ(p->where("context.size"), "empty.toml");  // no location: the file as a whole
}

TEST(profile_parse, ShippedCpuProfileHoldsTheDefaults) {
  const std::filesystem::path file = std::filesystem::path(GRAFT_SOURCE_DIR) / "profiles" / "cpu.toml";
  auto p = Profile::load(file);
  ASSERT_TRUE(p) << p.status().message();
  Profile expected = Profile::builtin();
  expected.source = file;
  // The file documents the defaults: every value equal, as the writer renders them.
  EXPECT_EQ(to_toml(*p), to_toml(expected));
  // And it does set every key explicitly (a key dropped from the file would go unnoticed above).
  for (const char* key : {"backend.name", "backend.threads", "kv.store", "speculative.enabled", "speculative.max_nodes",
                          "speculative.max_depth", "speculative.adaptive", "sampling.temperature", "sampling.top_k", "sampling.top_p",
                          "sampling.min_p", "sampling.repeat_penalty", "sampling.repeat_last_n",
                          "sampling.presence_penalty", "sampling.seed", "context.max_tokens",
                          "generation.prompt", "plugin_dirs"})
    EXPECT_TRUE(p->locations.count(key)) << key;
  // Except the context size: unset, so a model trained on fewer tokens caps it without a warning.
  EXPECT_FALSE(p->locations.count("context.size"));
}

}  // namespace
}  // namespace graft
