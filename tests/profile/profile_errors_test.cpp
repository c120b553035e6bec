// Each kind of profile error, with the exact one-line "file:line:column: message" a user sees.
#include <gtest/gtest.h>

#include <string>

#include "profile/profile.hpp"
#include "temp_dir.hpp"

namespace graft {
namespace {

// The message of a profile that must fail to parse; "(parsed)" when it unexpectedly passed.
std::string error_of(std::string_view toml) {
  auto p = Profile::parse(toml, "p.toml");
  if (p) return "(parsed)";
  EXPECT_EQ(p.status().message().find('\n'), std::string::npos) << "errors are one line";
  return p.status().message();
}

TEST(profile_errors, SyntaxErrorHasFileLineColumn) {
  EXPECT_EQ(error_of("[sampling\ntemperature = 1\n"),
            "p.toml:1:10: Error while parsing table header: expected ']', saw '\\n'");
  EXPECT_EQ(Profile::parse("[model]\npath = \"x\"\npath = \"y\"\n", "p.toml").status().code(), Errc::invalid_argument);
}

TEST(profile_errors, UnknownKeySuggestsTheClosestAndListsValidKeys) {
  EXPECT_EQ(error_of("[sampling]\ntemprature = 1\n"),
            "p.toml:2:1: unknown key 'temprature' in [sampling]; did you mean 'temperature'? valid keys: "
            "temperature, top_k, top_p, min_p, repeat_penalty, repeat_last_n, presence_penalty, seed");
}

TEST(profile_errors, UnknownKeyWithoutCloseMatchOnlyListsValidKeys) {
  EXPECT_EQ(error_of("[context]\n\n  banana = 1\n"),
            "p.toml:3:3: unknown key 'banana' in [context]; valid keys: size, max_tokens");
}

TEST(profile_errors, KeyInTheWrongTableSaysWhereItBelongs) {
  EXPECT_EQ(error_of("[context]\nseed = 1\n"),
            "p.toml:2:1: unknown key 'seed' in [context] ('seed' belongs in [sampling]); valid keys: size, max_tokens");
  EXPECT_EQ(error_of("temperature = 0.5\n"),
            "p.toml:1:1: unknown top-level key 'temperature' ('temperature' belongs in [sampling]); valid tables: "
            "[model], [backend], [kv], [speculative], [[drafter]], [sampling], [context], [generation]; "
            "valid top-level keys: plugin_dirs");
}

TEST(profile_errors, UnknownTableSuggestsTheClosest) {
  EXPECT_EQ(error_of("[model]\n[sampler]\ntemperature = 1\n"),
            "p.toml:2:2: unknown table [sampler]; did you mean [sampling]? valid tables: [model], [backend], [kv], "
            "[speculative], [[drafter]], [sampling], [context], [generation]; valid top-level keys: plugin_dirs");
  EXPECT_EQ(error_of("[[drafters]]\nname = \"ngram\"\n"),
            "p.toml:1:3: unknown table [[drafters]]; did you mean [[drafter]]? valid tables: [model], [backend], "
            "[kv], [speculative], [[drafter]], [sampling], [context], [generation]; valid top-level keys: plugin_dirs");
}

TEST(profile_errors, WrongType) {
  EXPECT_EQ(error_of("[sampling]\ntop_k = \"40\"\n"), "p.toml:2:9: sampling.top_k: expected integer, got string");
  EXPECT_EQ(error_of("[sampling]\ntemperature = \"hot\"\n"),
            "p.toml:2:15: sampling.temperature: expected number, got string");
  EXPECT_EQ(error_of("[speculative]\nenabled = 1\n"), "p.toml:2:11: speculative.enabled: expected boolean, got integer");
  EXPECT_EQ(error_of("[context]\nsize = 4096.0\n"), "p.toml:2:8: context.size: expected integer or \"auto\", got float");
  EXPECT_EQ(error_of("[context]\nsize = \"big\"\n"), "p.toml:2:8: context.size: expected integer or \"auto\", got string");
  EXPECT_EQ(error_of("sampling = 3\n"), "p.toml:1:12: sampling: expected table [sampling], got integer");
  EXPECT_EQ(error_of("[drafter]\nname = \"ngram\"\n"),
            "p.toml:1:1: drafter: expected array of tables [[drafter]], got table [drafter]");
}

TEST(profile_errors, OutOfRangeNamesTheRange) {
  EXPECT_EQ(error_of("[sampling]\ntemperature = 150\n"),
            "p.toml:2:15: sampling.temperature = 150 is out of range: must be in 0..100");
  EXPECT_EQ(error_of("[sampling]\ntop_p = 1.5\n"), "p.toml:2:9: sampling.top_p = 1.5 is out of range: must be in 0..1");
  EXPECT_EQ(error_of("[sampling]\ntop_k = -1\n"), "p.toml:2:9: sampling.top_k = -1 is out of range: must be >= 0");
  EXPECT_EQ(error_of("[context]\nsize = 8\n"), "p.toml:2:8: context.size = 8 is out of range: must be in 16..16777216");
  EXPECT_EQ(error_of("[context]\nmax_tokens = -2\n"),
            "p.toml:2:14: context.max_tokens = -2 is out of range: must be >= -1");
  EXPECT_EQ(error_of("[speculative]\nmax_nodes = 0\n"),
            "p.toml:2:13: speculative.max_nodes = 0 is out of range: must be in 1..256");
  // NaN compares false with everything: it must still be rejected.
  EXPECT_EQ(error_of("[sampling]\nmin_p = nan\n"), "p.toml:2:9: sampling.min_p = nan is out of range: must be in 0..1");
}

TEST(profile_errors, RangeBoundsAreInclusive) {
  auto p = Profile::parse("[sampling]\ntemperature = 100\ntop_p = 1\npresence_penalty = -2\n[context]\nsize = 16\n"
                          "max_tokens = -1\n",
                          "p.toml");
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_EQ(p->sampling.temperature, 100.0);
  EXPECT_EQ(p->sampling.presence_penalty, -2.0);
  EXPECT_EQ(p->context, 16);
  EXPECT_EQ(p->max_tokens, -1);
}

TEST(profile_errors, MissingRequiredDrafterName) {
  EXPECT_EQ(error_of("[[drafter]]\nname = \"ngram\"\n\n[[drafter]]\nn_max = 3\n"),
            "p.toml:4:1: drafter[1]: missing required key 'name' (string: drafter plugin: ngram, mtp, dflash2, ...; several "
            "tables fuse their drafters into one tree per round)");
}

TEST(profile_errors, BadArrayElementType) {
  EXPECT_EQ(error_of("plugin_dirs = [\"a\", 3]\n"), "p.toml:1:21: plugin_dirs[1]: expected string, got integer");
  EXPECT_EQ(error_of("plugin_dirs = \"a\"\n"), "p.toml:1:15: plugin_dirs: expected array of strings, got string");
  EXPECT_EQ(error_of("[kv]\nlayers = [1, \"x\"]\n"),
            "p.toml:2:14: kv.layers[1]: array elements must all have one type: expected number, got string");
  EXPECT_EQ(error_of("[[drafter]]\nname = \"mix\"\nweights = [true]\n"),
            "p.toml:3:12: drafter[0].weights[0]: arrays in plugin settings hold numbers or strings, got boolean");
  EXPECT_EQ(error_of("[backend]\nopts = { a = 1 }\n"),
            "p.toml:2:8: backend.opts: plugin settings are booleans, numbers, strings or arrays of numbers or "
            "strings, got table");
}

TEST(profile_errors, EmptyNamesAndPathsAreRejected) {
  EXPECT_EQ(error_of("[model]\npath = \"\"\n"), "p.toml:2:8: model.path: must not be empty");
  EXPECT_EQ(error_of("[[drafter]]\nname = \"\"\n"), "p.toml:2:8: drafter[0].name: must not be empty");
  EXPECT_EQ(error_of("[kv]\nstore = \"\"\n"), "p.toml:2:9: kv.store: must not be empty");
  EXPECT_TRUE(Profile::parse("[generation]\nprompt = \"\"\n", "p.toml"));  // an empty prompt is fine
}

TEST(profile_errors, CrossKeyRules) {
  EXPECT_EQ(error_of("[speculative]\nmax_nodes = 4\nmax_depth = 6\n"),
            "p.toml:3:1: speculative.max_depth = 6 exceeds speculative.max_nodes = 4; a chain needs a node per step");
  EXPECT_EQ(error_of("[speculative]\nenabled = true\n"),
            "p.toml:2:1: speculative.enabled = true but no [[drafter]] table is given; add one (e.g. [[drafter]] "
            "with name = \"ngram\") or set enabled = false");
}

TEST(profile_errors, FirstErrorInFileOrderIsReported) {
  // toml++ keeps keys sorted by name; the report must follow the file instead.
  EXPECT_EQ(error_of("[sampling]\ntop_k = \"x\"\nmin_p = 7\n"), "p.toml:2:9: sampling.top_k: expected integer, got string");
}

TEST(profile_errors, UnreadableFile) {
  test::TempDir dir;
  const auto missing = dir.path() / "missing.toml";
  auto p = Profile::load(missing);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().code(), Errc::io_error);
  EXPECT_EQ(p.status().message(), missing.string() + ": cannot read profile: No such file or directory");
  auto d = Profile::load(dir.path());
  ASSERT_FALSE(d);
  EXPECT_EQ(d.status().message(), dir.path().string() + ": is a folder, not a profile file");
}

TEST(profile_errors, LoadReportsTheRealFileName) {
  test::TempDir dir;
  const auto file = dir.write("bad.toml", "[sampling]\n\ntop_k = 1.5\n");
  auto p = Profile::load(file);
  ASSERT_FALSE(p);
  EXPECT_EQ(p.status().message(), file.string() + ":3:9: sampling.top_k: expected integer, got float");
}

}  // namespace
}  // namespace graft
