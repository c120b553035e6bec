#include <dlfcn.h>
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "fake_model.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace graft;

namespace {

const fs::path kFakeDir = FAKE_PLUGIN_DIR;
const fs::path kPluginDir = GRAFT_PLUGIN_DIR;

}  // namespace

TEST(PluginLibrary, LoadsCpuBackendAndChecksDescriptor) {
  auto lib = PluginLibrary::load(kPluginDir / "libgraft_backend_cpu.so");
  ASSERT_TRUE(lib) << lib.status().message();
  EXPECT_EQ((*lib)->kind(), PluginKind::backend);
  EXPECT_EQ((*lib)->name(), "cpu");
  EXPECT_EQ((*lib)->descriptor().abi_version, kAbiVersion);
  ASSERT_EQ((*lib)->config_keys().size(), 1u);
  EXPECT_STREQ((*lib)->config_keys()[0].key, "threads");
}

TEST(PluginLibrary, AbiMismatchNamesBothVersionsAndTheFile) {
  const fs::path file = kFakeDir / "libgraft_drafter_badabi.so";
  auto lib = PluginLibrary::load(file);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().code(), Errc::abi_mismatch);
  EXPECT_EQ(lib.status().message(),
            file.string() + ": plugin ABI version 999 does not match host ABI version " +
                std::to_string(kAbiVersion) + "; rebuild the plugin against graft SDK ABI " + std::to_string(kAbiVersion));
}

TEST(PluginLibrary, SharedLibraryWithoutDescriptorIsNotAPlugin) {
  const fs::path file = kFakeDir / "libgraft_drafter_notaplugin.so";
  auto lib = PluginLibrary::load(file);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().message(), file.string() + ": not a graft plugin (no 'graft_plugin' symbol exported)");
}

TEST(PluginLibrary, GarbageFileReportsTheLoaderError) {
  TempDir dir;
  const fs::path file = dir.path() / "libgraft_backend_garbage.so";
  std::ofstream out(file);
  for (int i = 0; i < 20; ++i) out << "this is not an ELF file\n";  // longer than an ELF header
  out.close();
  auto lib = PluginLibrary::load(file);
  ASSERT_FALSE(lib);
  const std::string& msg = lib.status().message();
  EXPECT_EQ(msg.rfind(file.string() + ": cannot load shared library: ", 0), 0u) << msg;
  EXPECT_NE(msg.find("invalid ELF header"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
}

TEST(PluginLibrary, MissingFile) {
  auto lib = PluginLibrary::load("/nonexistent/libgraft_drafter_x.so");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().message(), "/nonexistent/libgraft_drafter_x.so: no such plugin file");
}

TEST(PluginLibrary, DescriptorNameMustMatchFileName) {
  const fs::path file = kFakeDir / "libgraft_drafter_misnamed.so";
  auto lib = PluginLibrary::load(file);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().message(),
            file.string() + ": descriptor declares drafter 'othername', whose file must be named "
                            "libgraft_drafter_othername.so");
}

TEST(PluginLibrary, FactoryExceptionBecomesStatus) {
  auto lib = PluginLibrary::load(kFakeDir / "libgraft_kvstore_failing.so");
  ASSERT_TRUE(lib) << lib.status().message();
  DefaultHostServices host;
  auto obj = (*lib)->create<KvStoreFactory>(host, Config{});
  ASSERT_FALSE(obj);
  EXPECT_EQ(obj.status().code(), Errc::internal);
  EXPECT_EQ(obj.status().message(), "kvstore plugin 'failing' (" + (kFakeDir / "libgraft_kvstore_failing.so").string() +
                                        "): cannot reserve 1 TiB of KV cache");
}

TEST(PluginRegistry, MissingPluginNamesEveryFolderSearched) {
  PluginRegistry reg({kFakeDir, "/nonexistent/dir"});
  auto lib = reg.find(PluginKind::drafter, "nope");
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().code(), Errc::not_found);
  EXPECT_EQ(lib.status().message(),
            "drafter plugin 'nope' not found: no libgraft_drafter_nope.so in " + kFakeDir.string() +
                ", /nonexistent/dir (add a folder with plugin_dirs in the profile, --plugin-dir or "
                "GRAFT_PLUGIN_PATH)");
}

TEST(PluginRegistry, SearchOrderProfileThenEnvThenExeThenInstall) {
  setenv("GRAFT_PLUGIN_PATH", "/env/a:/env/b", 1);
  auto dirs = PluginRegistry::default_search_dirs({"/profile/dir"});
  unsetenv("GRAFT_PLUGIN_PATH");
  ASSERT_GE(dirs.size(), 4u);
  EXPECT_EQ(dirs[0], "/profile/dir");
  EXPECT_EQ(dirs[1], "/env/a");
  EXPECT_EQ(dirs[2], "/env/b");
  // The test binary lives in the build tree: <build>/tests/... so its sibling plugin dir is
  // derived from the executable; the last entry is the install location.
  EXPECT_EQ(dirs.back().string(), GRAFT_INSTALL_PLUGIN_DIR_FOR_TEST);
}

TEST(PluginRegistry, ScanReportsEachBrokenFileAndFirstDirectoryWins) {
  TempDir shadow;
  fs::copy_file(kFakeDir / "libgraft_drafter_counting.so", shadow.path() / "libgraft_drafter_counting.so");
  PluginRegistry reg({kFakeDir, shadow.path()});
  int ok = 0, failed = 0, shadowed = 0;
  for (auto& e : reg.scan()) {
    if (!e.shadowed_by.empty()) {
      ++shadowed;
      EXPECT_EQ(e.shadowed_by, kFakeDir / "libgraft_drafter_counting.so");
    } else if (e.library) {
      ++ok;
    } else {
      ++failed;
      EXPECT_EQ(e.error.message().rfind(e.file.string() + ": ", 0), 0u) << e.error.message();
    }
  }
  EXPECT_EQ(ok, 3);      // counting, test8, failing (its factory fails only when called)
  EXPECT_EQ(failed, 3);  // badabi, misnamed, notaplugin
  EXPECT_EQ(shadowed, 1);
}

TEST(PluginLifetime, ObjectsKeepTheirLibraryLoaded) {
  const fs::path file = kFakeDir / "libgraft_drafter_counting.so";
  auto is_loaded = [&] {
    void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
    if (h) dlclose(h);
    return h != nullptr;
  };
  ASSERT_FALSE(is_loaded());
  std::shared_ptr<Drafter> drafter;
  {
    PluginRegistry reg({kFakeDir});
    auto lib = reg.find(PluginKind::drafter, "counting");
    ASSERT_TRUE(lib) << lib.status().message();
    DefaultHostServices host;
    auto factory = (*lib)->create<DrafterFactory>(host, Config{});
    ASSERT_TRUE(factory) << factory.status().message();
    ByteHost model;
    auto d = (*factory)->create(model);
    ASSERT_TRUE(d) << d.status().message();
    drafter = (*lib)->adopt(std::move(*d));
  }  // registry, library handle and factory are gone; the drafter still holds the library
  ASSERT_TRUE(is_loaded());
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(h, nullptr);
  auto live = reinterpret_cast<int (*)()>(dlsym(h, "fake_counting_live"));
  ASSERT_NE(live, nullptr);
  EXPECT_EQ(live(), 1);  // the factory died, the drafter lives
  dlclose(h);

  std::vector<std::int32_t> ctx{5, 7};
  DraftTree tree;
  ASSERT_TRUE(drafter->propose({ctx, 3, 3}, tree).ok());
  EXPECT_EQ(tree.tokens, (std::vector<std::int32_t>{7, 7, 7}));
  EXPECT_EQ(tree.parents, (std::vector<std::int32_t>{-1, 0, 1}));
  EXPECT_TRUE(tree.valid(256));

  drafter.reset();
  EXPECT_FALSE(is_loaded()) << "the last object released the library";
}

TEST(DraftTree, ValidityRejectsForwardParents) {
  DraftTree t;
  t.add(1, -1);
  t.add(2, 0);
  t.add(3, 0);
  EXPECT_EQ(t.invalid(8), nullptr);
  t.parents[1] = 1;  // its own parent
  EXPECT_STREQ(t.invalid(8), "a parent does not precede its child");
  t.parents[1] = -2;
  EXPECT_STREQ(t.invalid(8), "a parent does not precede its child");
  t.parents[1] = 0;
  t.tokens[2] = 8;
  EXPECT_STREQ(t.invalid(8), "a token id is outside the vocabulary");
  t.tokens[2] = 3;
  t.q[2] = 0.0f;
  EXPECT_STREQ(t.invalid(8), "a probability q is outside (0, 1]");
  t.q[2] = 0.5f;
  t.dist[2] = 0;
  EXPECT_STREQ(t.invalid(8), "a distribution index is out of range");
  t.distributions.assign(8, 0.0f);
  EXPECT_STREQ(t.invalid(8), "a drawn token has probability 0 in its distribution");
  t.distributions[3] = 1.0f;
  EXPECT_EQ(t.invalid(8), nullptr);
  t.distributions.push_back(1.0f);
  EXPECT_STREQ(t.invalid(8), "distributions is not a whole number of n_vocab rows");
}

TEST(GraftPluginsCommand, ListsGoodPluginsAndFailsOnBrokenOnes) {
  auto good = run_command(std::string(GRAFT_EXE) + " plugins -v");
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find("backend  cpu "), std::string::npos) << good.output;
  EXPECT_NE(good.output.find("device: "), std::string::npos) << good.output;
  EXPECT_NE(good.output.find("key threads"), std::string::npos) << good.output;

  auto bad = run_command(std::string(GRAFT_EXE) + " plugins --plugin-dir " + kFakeDir.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_NE(bad.output.find("error: " + (kFakeDir / "libgraft_drafter_badabi.so").string() +
                            ": plugin ABI version 999 does not match host ABI version " + std::to_string(kAbiVersion)),
            std::string::npos)
      << bad.output;
  EXPECT_NE(bad.output.find("drafter  counting       1.2.3"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("quant    test8          0.1.0"), std::string::npos) << bad.output;
  EXPECT_NE(bad.output.find("3 failed"), std::string::npos) << bad.output;
}
