// A plugin's declared keys against a profile's plugin table, with a fake spec list.
#include <gtest/gtest.h>

#include <map>

#include "profile/plugin_config_check.hpp"
#include "profile/profile.hpp"

namespace graft {
namespace {

const ConfigKeySpec kNgramKeys[] = {
    {"n_max", ConfigType::integer, "longest draft", 1, 64},
    {"p_min", ConfigType::real, "stop below this probability", 0, 1},
    {"lookups", ConfigType::integer_list, "suffix lengths", 1, 64},
    {"weights", ConfigType::real_list, "per-lookup weights", 0, 1},
    {"mode", ConfigType::string, "copy or tree"},
    {"adaptive", ConfigType::boolean, "adapt the length"},
    {"corpus", ConfigType::string, "file of past outputs", -1e300, 1e300, true},
};

// The one drafter table of `body` (appended to a [[drafter]] header named ngram).
PluginChoice drafter(const std::string& body) {
  auto p = Profile::parse("[[drafter]]\nname = \"ngram\"\ncorpus = \"c.txt\"\n" + body, "p.toml");
  EXPECT_TRUE(p) << p.status().message();
  return p ? p->drafters.at(0) : PluginChoice{};
}

std::string check(const PluginChoice& c) {
  Status s = check_plugin_config(c, kNgramKeys, "drafter 'ngram'");
  return s.ok() ? "ok" : s.message();
}

TEST(profile_plugin_config, ValidConfigPasses) {
  EXPECT_EQ(check(drafter("n_max = 8\np_min = 1\nlookups = [16, 8]\nweights = [1, 0.5]\nmode = \"copy\"\n"
                          "adaptive = true\n")),
            "ok");
  EXPECT_EQ(check(drafter("lookups = []\nweights = []\n")), "ok");  // empty lists fit any list type
}

TEST(profile_plugin_config, UnknownKeySuggestsAndLists) {
  EXPECT_EQ(check(drafter("n_maxx = 3\n")),
            "p.toml:4:1: drafter 'ngram': unknown key 'n_maxx'; did you mean 'n_max'? valid keys: n_max, p_min, "
            "lookups, weights, mode, adaptive, corpus");
  PluginChoice none = drafter("");
  Status s = check_plugin_config(none, {}, "drafter 'ngram'");
  EXPECT_EQ(s.message(), "p.toml:3:1: drafter 'ngram': unknown key 'corpus'; drafter 'ngram' takes no settings");
}

TEST(profile_plugin_config, WrongType) {
  EXPECT_EQ(check(drafter("n_max = 2.5\n")), "p.toml:4:1: drafter 'ngram': n_max: expected integer, got float");
  EXPECT_EQ(check(drafter("mode = 1\n")), "p.toml:4:1: drafter 'ngram': mode: expected string, got integer");
  EXPECT_EQ(check(drafter("lookups = [1.5]\n")),
            "p.toml:4:1: drafter 'ngram': lookups: expected array of integers, got array of floats");
  EXPECT_EQ(check(drafter("adaptive = \"yes\"\n")),
            "p.toml:4:1: drafter 'ngram': adaptive: expected boolean, got string");
}

TEST(profile_plugin_config, OutOfRangeIncludingListElements) {
  EXPECT_EQ(check(drafter("n_max = 100\n")),
            "p.toml:4:1: drafter 'ngram': n_max = 100 is out of range: must be in 1..64");
  EXPECT_EQ(check(drafter("p_min = 1.5\n")),
            "p.toml:4:1: drafter 'ngram': p_min = 1.5 is out of range: must be in 0..1");
  EXPECT_EQ(check(drafter("\nlookups = [16, 0, 4]\n")),
            "p.toml:5:1: drafter 'ngram': lookups[1] = 0 is out of range: must be in 1..64");
  EXPECT_EQ(check(drafter("weights = [0.5, 2]\n")),
            "p.toml:4:1: drafter 'ngram': weights[1] = 2 is out of range: must be in 0..1");
}

TEST(profile_plugin_config, MissingRequiredKeyPointsAtTheTable) {
  auto p = Profile::parse("[kv]\n\n[[drafter]]\nname = \"ngram\"\n", "p.toml");
  ASSERT_TRUE(p);
  EXPECT_EQ(check(p->drafters[0]),
            "p.toml:3:1: drafter 'ngram': missing required key 'corpus' (string: file of past outputs)");
}

TEST(profile_plugin_config, ReportsTheFirstProblemInFileOrder) {
  // 'zeta' sorts last by name but comes first in the file.
  EXPECT_EQ(check(drafter("zeta = 1\nadaptive = 3\n")),
            "p.toml:4:1: drafter 'ngram': unknown key 'zeta'; valid keys: n_max, p_min, lookups, weights, mode, "
            "adaptive, corpus");
}

TEST(profile_plugin_config, NormalizedConfigMatchesTheDeclaredTypes) {
  PluginChoice c = drafter("p_min = 1\nweights = [1, 0]\nlookups = []\n");
  ASSERT_EQ(check(c), "ok");
  Config n = normalized_plugin_config(c, kNgramKeys);
  ASSERT_TRUE(std::holds_alternative<double>(n.values().at("p_min")));
  EXPECT_EQ(n.get_real_list("weights"), (std::vector<double>{1.0, 0.0}));
  EXPECT_EQ(n.get_int_list("lookups"), std::vector<std::int64_t>{});
  EXPECT_EQ(n.get_string("corpus"), "c.txt");
}

TEST(profile_plugin_config, WholeProfileThroughALookup) {
  auto p = Profile::parse("[backend]\nthreads = 2\nnuma = true\n[[drafter]]\nname = \"ngram\"\ncorpus = \"x\"\n"
                          "n_max = 0\n",
                          "p.toml");
  ASSERT_TRUE(p) << p.status().message();
  const ConfigKeySpec backend_keys[] = {{"numa", ConfigType::boolean, "bind threads to nodes"}};
  std::map<std::string, int> asked;
  PluginKeyLookup lookup = [&](PluginKind kind, std::string_view name) -> Expected<std::span<const ConfigKeySpec>> {
    asked[plugin_label(kind, name)]++;
    if (kind == PluginKind::backend) return std::span<const ConfigKeySpec>(backend_keys);
    if (kind == PluginKind::drafter) return std::span<const ConfigKeySpec>(kNgramKeys);
    return std::span<const ConfigKeySpec>();
  };
  EXPECT_EQ(check_profile_plugins(*p, lookup).message(),
            "p.toml:7:1: drafter 'ngram': n_max = 0 is out of range: must be in 1..64");
  EXPECT_EQ(asked, (std::map<std::string, int>{{"backend 'cpu'", 1}, {"kv store 'device'", 1}, {"drafter 'ngram'", 1}}));

  // A plugin that cannot be found: the host's message, pointed at the table that asked for it.
  PluginKeyLookup missing = [&](PluginKind kind, std::string_view name) -> Expected<std::span<const ConfigKeySpec>> {
    if (kind == PluginKind::backend) return std::span<const ConfigKeySpec>(backend_keys);
    if (kind != PluginKind::drafter) return std::span<const ConfigKeySpec>();
    return Status(Errc::not_found, "no drafter plugin '" + std::string(name) + "' in /plugins");
  };
  Status s = check_profile_plugins(*p, missing);
  EXPECT_EQ(s.code(), Errc::not_found);
  EXPECT_EQ(s.message(), "p.toml:4:1: no drafter plugin 'ngram' in /plugins");
}

}  // namespace
}  // namespace graft
