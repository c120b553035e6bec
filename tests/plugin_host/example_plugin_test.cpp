// Loads the example drafter that the fixture built out of tree against the installed SDK.
#include <gtest/gtest.h>

#include <filesystem>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"
#include "fake_model.hpp"

using namespace graft;

namespace {

std::vector<std::int32_t> ids(std::string_view s) { return {s.begin(), s.end()}; }

}  // namespace

TEST(ExamplePhraseDrafter, ProposesMergedContinuationsAsATree) {
  auto lib = PluginLibrary::load(std::filesystem::path(EXAMPLE_PLUGIN_DIR) / "libgraft_drafter_phrase.so");
  ASSERT_TRUE(lib) << lib.status().message();
  EXPECT_STREQ((*lib)->descriptor().version, "1.0.0");

  DefaultHostServices host;
  Config cfg;
  cfg.set("phrases", std::vector<std::string>{"hello world", "hello there", "goodbye"});
  cfg.set("min_match", std::int64_t{3});
  auto factory = (*lib)->create<DrafterFactory>(host, cfg);
  ASSERT_TRUE(factory) << factory.status().message();
  ByteHost model;
  auto d = (*factory)->create(model);
  ASSERT_TRUE(d) << d.status().message();
  auto drafter = (*lib)->adopt(std::move(*d));

  const auto ctx = ids("say hello");
  DraftTree tree;
  ASSERT_TRUE(drafter->propose({ctx, 64, 3}, tree).ok());
  ASSERT_TRUE(tree.valid(256));
  // " " is shared; then "wo" and "th" branch off it (depth 3).
  EXPECT_EQ(tree.tokens, ids(" woth"));
  EXPECT_EQ(tree.parents, (std::vector<std::int32_t>{-1, 0, 1, 0, 3}));

  DraftTree small;
  ASSERT_TRUE(drafter->propose({ctx, 2, 8}, small).ok());
  EXPECT_EQ(small.size(), 2u) << "node budget respected";

  DraftTree none;
  ASSERT_TRUE(drafter->propose({ids("say hi"), 64, 8}, none).ok());
  EXPECT_EQ(none.size(), 0u) << "no phrase matches 3 tokens";
}

TEST(ExamplePhraseDrafter, RequiresPhrases) {
  auto lib = PluginLibrary::load(std::filesystem::path(EXAMPLE_PLUGIN_DIR) / "libgraft_drafter_phrase.so");
  ASSERT_TRUE(lib) << lib.status().message();
  DefaultHostServices host;
  auto factory = (*lib)->create<DrafterFactory>(host, Config{});
  ASSERT_FALSE(factory);
  EXPECT_NE(factory.status().message().find("'phrases' must list at least one phrase"), std::string::npos);
}
