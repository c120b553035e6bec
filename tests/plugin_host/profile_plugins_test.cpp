// A profile's plugin tables are checked against the plugins that will serve them.
#include <gtest/gtest.h>

#include <fstream>

#include "plugin_host/profile_plugins.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

const std::string kFake = FAKE_PLUGIN_DIR;

Status check(const std::string& toml) {
  auto profile = Profile::parse(toml, "test.toml");
  EXPECT_TRUE(profile) << profile.status().message();
  if (!profile) return profile.status();
  PluginRegistry registry = registry_for(*profile);
  return check_profile_plugins(*profile, registry);
}

const std::string kHead = "plugin_dirs = [\"" + kFake + "\"]\n[kv]\nstore = \"failing\"\n";

}  // namespace

TEST(ProfilePlugins, NamedPluginsLoadAndAcceptTheirKeys) {
  Status st = check(kHead + "[backend]\nname = \"cpu\"\nthreads = 2\n[[drafter]]\nname = \"counting\"\n");
  EXPECT_TRUE(st.ok()) << st.message();
}

TEST(ProfilePlugins, UnknownBackendKeyPointsAtItWithASuggestion) {
  Status st = check(kHead + "[backend]\nname = \"cpu\"\nthreadz = 2\n");
  EXPECT_EQ(st.message(),
            "test.toml:6:1: backend 'cpu': unknown key 'threadz'; did you mean 'threads'? valid keys: threads");
}

TEST(ProfilePlugins, KeysForAPluginThatTakesNone) {
  Status st = check(kHead + "[[drafter]]\nname = \"counting\"\ndepth = 3\n");
  EXPECT_EQ(st.message(), "test.toml:6:1: drafter 'counting': unknown key 'depth'; drafter 'counting' takes no settings");
}

TEST(ProfilePlugins, MissingDrafterPointsAtItsTable) {
  Status st = check(kHead + "[[drafter]]\nname = \"nosuch\"\n");
  EXPECT_EQ(st.code(), Errc::not_found);
  EXPECT_EQ(st.message().rfind("test.toml:4:1: drafter plugin 'nosuch' not found: no libgraft_drafter_nosuch.so in " +
                                   kFake + ", ",
                               0),
            0u)
      << st.message();
}

TEST(ProfilePlugins, AbiMismatchedDrafterIsRefusedWithItsFile) {
  Status st = check(kHead + "[[drafter]]\nname = \"badabi\"\n");
  EXPECT_EQ(st.code(), Errc::abi_mismatch);
  EXPECT_EQ(st.message(), "test.toml:4:1: " + kFake +
                              "/libgraft_drafter_badabi.so: plugin ABI version 999 does not match host ABI "
                              "version " + std::to_string(kAbiVersion) + "; rebuild the plugin against graft SDK ABI " +
                              std::to_string(kAbiVersion));
}

TEST(ProfilePlugins, GraftProfileCheckLoadsThePlugins) {
  TempDir dir;
  const auto file = dir.path() / "p.toml";
  std::ofstream(file) << kHead << "[[drafter]]\nname = \"counting\"\nwidth = 1\n";
  auto r = run_command(std::string(GRAFT_EXE) + " profile check " + file.string());
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output, file.string() + ":6:1: drafter 'counting': unknown key 'width'; drafter 'counting' takes no "
                                      "settings\n");
}
