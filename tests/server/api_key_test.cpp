// Where graft serve's API key comes from (flag, file, environment) and how a request's headers
// are matched against it (server/api_key.hpp).
#include "server/api_key.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

using namespace graft::server;

namespace {
std::filesystem::path temp_file(const std::string& name, const std::string& text) {
  const auto p = std::filesystem::temp_directory_path() / name;
  std::ofstream(p) << text;
  return p;
}
}  // namespace

TEST(ApiKey, ComesFromOneFlagElseTheEnvironment) {
  auto none = resolve_api_key({});
  ASSERT_TRUE(none);
  EXPECT_EQ(none->key, "");
  auto flag = resolve_api_key({.flag = "k1", .file = std::nullopt, .env = "k3"});
  ASSERT_TRUE(flag);
  EXPECT_EQ(flag->key, "k1");
  EXPECT_NE(flag->origin.find("process list"), std::string::npos) << flag->origin;
  const auto file = temp_file("graft_api_key_test.txt", "  k2 \nsecond line\n");
  auto from_file = resolve_api_key({.flag = std::nullopt, .file = file.string(), .env = "k3"});
  ASSERT_TRUE(from_file);
  EXPECT_EQ(from_file->key, "k2");
  EXPECT_EQ(from_file->origin, "--api-key-file " + file.string());
  auto env = resolve_api_key({.flag = std::nullopt, .file = std::nullopt, .env = "k3"});
  ASSERT_TRUE(env);
  EXPECT_EQ(env->key, "k3");
  EXPECT_EQ(env->origin, "GRAFT_API_KEY");
  std::filesystem::remove(file);
}

TEST(ApiKey, ConflictsAndEmptyKeysAreErrorsNeverNoKey) {
  const auto empty = temp_file("graft_api_key_empty.txt", "\n");
  const std::pair<ApiKeySource, std::string> cases[] = {
      {{.flag = "a", .file = "b", .env = std::nullopt}, "--api-key and --api-key-file: give one of them"},
      {{.flag = "", .file = std::nullopt, .env = std::nullopt}, "--api-key: the key is empty"},
      {{.flag = std::nullopt, .file = "/nonexistent/graft-key", .env = std::nullopt},
       "--api-key-file: cannot read /nonexistent/graft-key"},
      {{.flag = std::nullopt, .file = empty.string(), .env = std::nullopt},
       "--api-key-file: " + empty.string() + " holds no key on its first line"},
      {{.flag = std::nullopt, .file = std::nullopt, .env = ""}, "GRAFT_API_KEY is set but empty"},
  };
  for (const auto& [source, message] : cases) {
    auto r = resolve_api_key(source);
    ASSERT_FALSE(r) << message;
    EXPECT_EQ(r.status().message(), message);
  }
  std::filesystem::remove(empty);
}

TEST(ApiKey, TheSchemeInAnyCaseTheKeyExactly) {
  EXPECT_TRUE(key_matches("Bearer sekrit", "", "sekrit"));
  EXPECT_TRUE(key_matches("bearer sekrit", "", "sekrit"));
  EXPECT_TRUE(key_matches("BeArEr sekrit", "", "sekrit"));
  EXPECT_TRUE(key_matches("", "sekrit", "sekrit"));
  EXPECT_FALSE(key_matches("Bearer sekri", "", "sekrit"));
  EXPECT_FALSE(key_matches("Bearer sekritt", "", "sekrit"));
  EXPECT_FALSE(key_matches("Bearer SEKRIT", "", "sekrit"));
  EXPECT_FALSE(key_matches("Token sekrit", "", "sekrit"));
  EXPECT_FALSE(key_matches("sekrit", "", "sekrit"));
  EXPECT_FALSE(key_matches("", "", "sekrit"));
  EXPECT_FALSE(key_matches("", "sekri", "sekrit"));
}
