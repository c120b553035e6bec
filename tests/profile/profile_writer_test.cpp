// `graft profile show` output: TOML that reads back into the same profile.
#include <gtest/gtest.h>

#include "profile/profile.hpp"
#include "profile/profile_schema.hpp"
#include "profile/profile_writer.hpp"

namespace graft {
namespace {

TEST(profile_writer, RoundTripsEverySettingAndPluginKey) {
  const char* toml = R"(plugin_dirs = ["/opt/p"]
[model]
path = "/m/model.gguf"
[backend]
threads = 3
numa = false
[kv]
store = "quant"
k_type = "q8_0"
[speculative]
enabled = true
max_nodes = 12
[[drafter]]
name = "ngram"
lookups = [16, 8]
[[drafter]]
name = "mtp"
p_min = 0.25
layers = [1.5, 2.0]
[sampling]
temperature = 0.3
seed = 7
[context]
size = 1024
[generation]
prompt = "say \"hi\"\n\tand\\bye"
)";
  auto first = Profile::parse(toml, "/x/p.toml");
  ASSERT_TRUE(first) << first.status().message();
  const std::string text = to_toml(*first);
  auto second = Profile::parse(text, "/x/p.toml");
  ASSERT_TRUE(second) << second.status().message() << "\n" << text;
  EXPECT_EQ(to_toml(*second), text);
  EXPECT_EQ(second->prompt, "say \"hi\"\n\tand\\bye");
  EXPECT_EQ(second->sampling.temperature, 0.3);
  ASSERT_EQ(second->drafters.size(), 2u);
  EXPECT_EQ(second->drafters[1].config.get_real("p_min"), 0.25);
  EXPECT_EQ(second->drafters[1].config.get_real_list("layers"), (std::vector<double>{1.5, 2.0}));
  EXPECT_EQ(second->drafters[0].config.get_int_list("lookups"), (std::vector<std::int64_t>{16, 8}));
  EXPECT_EQ(second->kv.config.get_string("k_type"), "q8_0");
  // Reals stay reals: 1.0, not 1 (which TOML would read as an integer).
  EXPECT_NE(text.find("repeat_penalty = 1.0"), std::string::npos) << text;
}

TEST(profile_writer, UnsetModelIsACommentNotAnEmptyPath) {
  const std::string text = to_toml(Profile::builtin());
  EXPECT_NE(text.find("# path = (not set)"), std::string::npos) << text;
  EXPECT_TRUE(Profile::parse(text, "shown.toml"));
}

TEST(profile_writer, QuotesControlCharacters) {
  EXPECT_EQ(toml_quote("a\"b\\c\n\x01"), "\"a\\\"b\\\\c\\n\\u0001\"");
}

TEST(profile_writer, SchemaNamesAndRanges) {
  EXPECT_EQ(schema::range_text(0, 100), "0..100");
  EXPECT_EQ(schema::range_text(-1, schema::kNoBound), ">= -1");
  EXPECT_EQ(schema::range_text(-schema::kNoBound, 2), "<= 2");
  EXPECT_EQ(schema::range_text(-1e300, 1e300), "");  // the SDK's "no bound" sentinels
  EXPECT_EQ(schema::format_number(0.05), "0.05");
  EXPECT_EQ(schema::format_number(16777216.0), "16777216");
  EXPECT_EQ(schema::format_number(std::int64_t{-9223372036854775807}), "-9223372036854775807");
  const auto* drafter = schema::find_section("drafter");
  ASSERT_NE(drafter, nullptr);
  EXPECT_EQ(schema::table_header(*drafter), "[[drafter]]");
  EXPECT_EQ(schema::setting_name(*drafter, "name", 2), "drafter[2].name");
  EXPECT_EQ(schema::setting_name(*drafter, "", 2), "drafter[2]");
  EXPECT_EQ(schema::section_defining("top_p")->name, "sampling");
}

}  // namespace
}  // namespace graft
