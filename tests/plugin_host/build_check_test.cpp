// What a plugin was built with: the descriptor records the standard library, the SDK header hash
// and the compiler; the host refuses another standard library or other headers with one line, and
// the committed sdk/abi_hash.txt catches a header change made without an ABI bump.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

#include "graft/graft.hpp"
#include "plugin_host/plugin_library.hpp"
#include "test_util.hpp"

namespace fs = std::filesystem;
using namespace graft;

namespace {

const fs::path kMismatchedDir = MISMATCHED_PLUGIN_DIR;
const fs::path kPluginDir = GRAFT_PLUGIN_DIR;

bool is_hex16(const std::string& s) {
  if (s.size() != 16) return false;
  for (char c : s)
    if (!std::isxdigit(static_cast<unsigned char>(c)) || std::isupper(static_cast<unsigned char>(c))) return false;
  return true;
}

bool has_line(const std::string& text, const std::string& line) {
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);)
    if (l == line) return true;
  return false;
}

}  // namespace

TEST(PluginBuild, DescriptorRecordsTheToolchainAndHeaders) {
  auto lib = PluginLibrary::load(kPluginDir / "libgraft_backend_cpu.so");
  ASSERT_TRUE(lib) << lib.status().message();
  const PluginDescriptor& d = (*lib)->descriptor();
  // The cpu plugin spells none of these out: the descriptor's defaults recorded its build.
  EXPECT_STREQ(d.stdlib, GRAFT_STDLIB_TAG);
  EXPECT_STREQ(d.sdk_hash, GRAFT_SDK_HEADER_HASH);
  EXPECT_STREQ(d.compiler, GRAFT_COMPILER_TAG);
  EXPECT_TRUE(is_hex16(d.sdk_hash)) << d.sdk_hash;
  EXPECT_STREQ(d.version, GRAFT_SDK_VERSION_STRING);
  // One version number: the SDK's is generated from project(graft VERSION ...), as the host's is.
  EXPECT_STREQ(GRAFT_SDK_VERSION_STRING, GRAFT_VERSION_STRING);
}

TEST(PluginBuild, TagsNameTheLibraryAndCompilerVersions) {
#if defined(_LIBCPP_VERSION)
  EXPECT_EQ(std::string(GRAFT_STDLIB_TAG), "libc++ " + std::to_string(_LIBCPP_VERSION));
#elif defined(_GLIBCXX_RELEASE)
  EXPECT_EQ(std::string(GRAFT_STDLIB_TAG),
            "libstdc++ " + std::to_string(_GLIBCXX_RELEASE) + (_GLIBCXX_USE_CXX11_ABI ? " (cxx11 ABI)" : " (old ABI)"));
#endif
#if defined(__clang__)
  EXPECT_EQ(std::string(GRAFT_COMPILER_TAG), "clang " + std::to_string(__clang_major__) + "." +
                                                 std::to_string(__clang_minor__) + "." +
                                                 std::to_string(__clang_patchlevel__));
#elif defined(__GNUC__)
  EXPECT_EQ(std::string(GRAFT_COMPILER_TAG), "gcc " + std::to_string(__GNUC__) + "." + std::to_string(__GNUC_MINOR__) +
                                                 "." + std::to_string(__GNUC_PATCHLEVEL__));
#endif
}

// bad_stdlib.cpp also carries a wrong header hash: the standard library is checked first.
TEST(PluginBuild, OtherStandardLibraryIsRefusedWithBothValues) {
  const fs::path file = kMismatchedDir / "libgraft_drafter_badstdlib.so";
  auto lib = PluginLibrary::load(file);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().code(), Errc::abi_mismatch);
  EXPECT_EQ(lib.status().message(), file.string() + ": standard library differs: plugin 'libc++ 170000', host '" +
                                        GRAFT_STDLIB_TAG + "'; rebuild the plugin against this graft SDK");
}

TEST(PluginBuild, OtherSdkHeadersAreRefusedWithBothHashes) {
  const fs::path file = kMismatchedDir / "libgraft_drafter_badhash.so";
  auto lib = PluginLibrary::load(file);
  ASSERT_FALSE(lib);
  EXPECT_EQ(lib.status().code(), Errc::abi_mismatch);
  EXPECT_EQ(lib.status().message(), file.string() + ": SDK header hash differs: plugin '0123456789abcdef', host '" +
                                        GRAFT_SDK_HEADER_HASH + "'; rebuild the plugin against this graft SDK");
}

TEST(PluginBuild, GraftPluginsReportsMismatchesAndShowsTheBuild) {
  auto bad = run_command(std::string(GRAFT_EXE) + " plugins --plugin-dir " + kMismatchedDir.string());
  EXPECT_EQ(bad.exit_code, 1) << bad.output;
  EXPECT_TRUE(has_line(bad.output, "error: " + (kMismatchedDir / "libgraft_drafter_badhash.so").string() +
                                        ": SDK header hash differs: plugin '0123456789abcdef', host '" +
                                        GRAFT_SDK_HEADER_HASH + "'; rebuild the plugin against this graft SDK"))
      << bad.output;
  EXPECT_NE(bad.output.find("error: " + (kMismatchedDir / "libgraft_drafter_badstdlib.so").string() +
                            ": standard library differs"),
            std::string::npos)
      << bad.output;

  auto good = run_command(std::string(GRAFT_EXE) + " plugins -v");
  EXPECT_EQ(good.exit_code, 0) << good.output;
  EXPECT_NE(good.output.find(std::string("built with ") + GRAFT_COMPILER_TAG + ", " + GRAFT_STDLIB_TAG +
                             "; SDK headers " + GRAFT_SDK_HEADER_HASH),
            std::string::npos)
      << good.output;
}

// sdk/abi_hash.txt records the header hash each ABI version shipped with. Editing a header changes
// the generated hash; this fails until the ABI version is bumped and the new hash recorded.
TEST(SdkAbi, HeaderHashIsRecordedForThisAbiVersion) {
  const fs::path file = fs::path(GRAFT_SOURCE_DIR) / "sdk" / "abi_hash.txt";
  std::ifstream in(file);
  ASSERT_TRUE(in) << "cannot read " << file;
  std::map<unsigned, std::string> recorded;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    unsigned abi = 0;
    std::string hash, rest;
    ASSERT_TRUE(fields >> abi >> hash && !(fields >> rest) && is_hex16(hash))
        << file.string() << ":" << n << ": expected \"<ABI version> <16 hex digits>\", got \"" << line << "\"";
    ASSERT_TRUE(recorded.emplace(abi, hash).second) << file.string() << ":" << n << ": ABI " << abi << " recorded twice";
  }
  const std::string current = GRAFT_SDK_HEADER_HASH;
  ASSERT_TRUE(is_hex16(current)) << current;
  const auto it = recorded.find(kAbiVersion);
  ASSERT_NE(it, recorded.end()) << "sdk/abi_hash.txt records no header hash for ABI " << kAbiVersion
                                << "; the headers hash to " << current << ": add the line \"" << kAbiVersion << " "
                                << current << "\"";
  EXPECT_EQ(it->second, current)
      << "The SDK headers (sdk/include/graft/*.hpp) changed without an ABI version bump: they hash to " << current
      << ", sdk/abi_hash.txt records " << it->second << " for ABI " << kAbiVersion << ". Bump GRAFT_ABI_VERSION "
      << "and GRAFT_ABI_NAMESPACE in sdk/include/graft/version.hpp to " << kAbiVersion + 1
      << " and add the line \"" << kAbiVersion + 1 << " <the hash it then reports>\" to sdk/abi_hash.txt.";
  EXPECT_EQ(recorded.rbegin()->first, kAbiVersion) << "sdk/abi_hash.txt records a later ABI than GRAFT_ABI_VERSION";
  for (const auto& [abi, hash] : recorded) {
    if (abi != kAbiVersion) {
      EXPECT_NE(hash, current) << "ABI " << kAbiVersion << " has the headers of ABI " << abi;
    }
  }
}
