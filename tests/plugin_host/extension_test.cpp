// Optional capabilities through PluginObject::extension: an object without any answers nullptr,
// and `graft plugins -v` prints what the CPU backend offers.
#include <gtest/gtest.h>

#include <filesystem>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"
#include "test_util.hpp"

using namespace graft;

TEST(PluginExtensions, AnObjectWithoutExtensionsAnswersNull) {
  auto lib = PluginLibrary::load(std::filesystem::path(FAKE_PLUGIN_DIR) / "libgraft_drafter_counting.so");
  ASSERT_TRUE(lib) << lib.status().message();
  DefaultHostServices host;
  auto factory = (*lib)->create<DrafterFactory>(host, Config{});
  ASSERT_TRUE(factory) << factory.status().message();
  EXPECT_EQ((*factory)->extension(CpuSimdExtension::kName, CpuSimdExtension::kVersion), nullptr);
  EXPECT_EQ(find_extension<CpuSimdExtension>(**factory), nullptr);
  EXPECT_EQ((*factory)->extension("", 0), nullptr);
}

TEST(PluginExtensions, GraftPluginsVerbosePrintsTheCpuSimdExtension) {
  auto r = run_command(std::string(GRAFT_EXE) + " plugins -v");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  const auto at = r.output.find("\n         extension graft.cpu.simd v1: ");
  ASSERT_NE(at, std::string::npos) << r.output;
  const std::string line = r.output.substr(at + 1, r.output.find('\n', at + 1) - at - 1);
  // "<level> kernels, <n> floats per vector; CPU features: <features>", level and width agreeing
  bool known = false;
  for (const char* level_and_width : {"scalar kernels, 1 floats", "avx2 kernels, 8 floats", "avx512 kernels, 16 floats"})
    known = known || line.find(std::string(": ") + level_and_width + " per vector; CPU features: ") != std::string::npos;
  EXPECT_TRUE(known) << line;
  // It follows the cpu backend's device line.
  const auto cpu = r.output.find("backend  cpu ");
  ASSERT_NE(cpu, std::string::npos);
  EXPECT_LT(cpu, at);
}
