// Weight formats from plugins extend what the GGUF loader accepts, without a host rebuild.
#include <gtest/gtest.h>

#include <vector>

#include "gguf/gguf_file.hpp"
#include "gguf/gguf_writer.hpp"
#include "plugin_host/weight_formats.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {
const std::string kFake = FAKE_PLUGIN_DIR;
}

TEST(WeightFormats, PluginTypeIdBecomesLoadable) {
  PluginRegistry registry({kFake});
  DefaultHostServices host;
  auto formats = load_weight_formats(registry, host);
  ASSERT_TRUE(formats) << formats.status().message();
  const gguf::TypeInfo* info = formats->types.find(250);
  ASSERT_NE(info, nullptr);
  EXPECT_EQ(info->name, "test8");
  EXPECT_EQ(info->block_elems, 16u);
  EXPECT_EQ(info->block_bytes, 20u);
  ASSERT_NE(host.weight_format(250), nullptr);
  EXPECT_EQ(host.weight_format(type_id::q8_0), nullptr) << "no plugin provides q8_0 in this folder";
  EXPECT_NE(formats->types.find(type_id::q8_0), nullptr) << "builtin ggml ids stay known";

  // Quantize through the plugin, write with the extended table, read it back.
  std::vector<float> w(32);
  for (int i = 0; i < 32; ++i) w[i] = (i - 16) * 0.25f;
  std::vector<std::uint8_t> q(40);
  ASSERT_TRUE(host.weight_format(250)->quantize(250, w.data(), q.data(), 1, 32, nullptr).ok());
  const std::uint64_t ne[] = {32};
  gguf::Writer builtin_writer;
  Status refused = builtin_writer.add_tensor("w", ne, 250, q);
  EXPECT_FALSE(refused.ok());
  gguf::Writer writer(formats->types);
  ASSERT_TRUE(writer.add_tensor("w", ne, 250, q).ok());
  const auto bytes = writer.to_bytes();

  auto rejected = gguf::File::parse(bytes);
  ASSERT_FALSE(rejected);
  EXPECT_NE(rejected.status().message().find("unknown ggml type id 250"), std::string::npos) << rejected.status().message();

  auto file = gguf::File::parse(bytes, formats->types);
  ASSERT_TRUE(file) << file.status().message();
  const gguf::TensorInfo* t = (*file)->tensor("w");
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(t->bytes, 40u);
  std::vector<float> back(32);
  ASSERT_TRUE(host.weight_format(250)->dequantize(250, t->data, back.data(), 32).ok());
  for (int i = 0; i < 32; ++i) EXPECT_NEAR(back[i], w[i], 4.0f / 127 / 2 + 1e-6f) << i;
}

TEST(WeightFormats, PluginMayNotRedefineAGgmlTypeGeometry) {
  PluginRegistry registry({CONFLICTING_PLUGIN_DIR});
  DefaultHostServices host;
  auto formats = load_weight_formats(registry, host);
  ASSERT_FALSE(formats);
  EXPECT_EQ(formats.status().message(),
            std::string(CONFLICTING_PLUGIN_DIR) +
                "/libgraft_quant_conflicting.so: declares type id 2 ('q4_0') as 32 elements in 20 bytes per block, "
                "but GGUF defines id 2 ('q4_0') as 32 in 18");
}

TEST(WeightFormats, GraftInfoReadsPluginTypes) {
  PluginRegistry registry({kFake});
  DefaultHostServices host;
  auto formats = load_weight_formats(registry, host);
  ASSERT_TRUE(formats);
  gguf::Writer writer(formats->types);
  const std::uint64_t ne[] = {16, 2};
  ASSERT_TRUE(writer.add_tensor("blk.0.w", ne, 250, std::vector<std::uint8_t>(40)).ok());
  TempDir dir;
  ASSERT_TRUE(writer.write(dir.path() / "m.gguf").ok());
  auto without = run_command(std::string(GRAFT_EXE) + " info " + (dir.path() / "m.gguf").string());
  EXPECT_EQ(without.exit_code, 1);
  EXPECT_NE(without.output.find("unknown ggml type id 250"), std::string::npos) << without.output;
  auto with = run_command(std::string(GRAFT_EXE) + " info --tensors --plugin-dir " + kFake + " " +
                          (dir.path() / "m.gguf").string());
  EXPECT_EQ(with.exit_code, 0) << with.output;
  EXPECT_NE(with.output.find("test8"), std::string::npos) << with.output;
}

// Kernel libraries: loaded for the backend in use only, asked for a type its format plugin has no
// kernels for on that backend; two claiming one type, or one computing elsewhere than its name
// says, are refused naming the file.
TEST(KernelLibraries, TheBackendsLibrariesBringKernelsForOtherPluginsFormats) {
  const std::string dir = KERNEL_PLUGIN_DIR;
  PluginRegistry registry({dir});
  DefaultHostServices host;
  ASSERT_TRUE(load_weight_formats(registry, host));
  EXPECT_EQ(host.format_kernels(250, "fakegpu"), nullptr) << "before its library is loaded";
  auto for_cpu = load_kernel_libraries(registry, host, "cpu");
  ASSERT_TRUE(for_cpu) << for_cpu.status().message();
  EXPECT_TRUE(for_cpu->empty()) << "a CPU run opens no other backend's library";
  auto libs = load_kernel_libraries(registry, host, "fakegpu");
  ASSERT_TRUE(libs) << libs.status().message();
  ASSERT_EQ(libs->size(), 1u);
  FormatKernels* k = host.format_kernels(250, "fakegpu");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k, (*libs)[0]->kernels(250));
  EXPECT_EQ(host.format_kernels(250, "cpu"), nullptr) << "test8 has no CPU kernels and no library for the CPU";
  EXPECT_EQ(host.format_kernels(type_id::q8_0, "fakegpu"), nullptr);
  EXPECT_EQ(host.kv_store_library("device", "fakegpu"), (*libs)[0].get());
  EXPECT_EQ(host.kv_store_library("device", "cpu"), nullptr);
  EXPECT_EQ(host.kv_store_library("quant", "fakegpu"), nullptr);
}

TEST(KernelLibraries, TwoClaimingOneTypeOrOneOnAnotherBackendAreRefused) {
  const std::string base = std::filesystem::path(KERNEL_PLUGIN_DIR).parent_path().string();
  {
    PluginRegistry registry({base + "/kernel_plugins_dup"});
    DefaultHostServices host;
    auto libs = load_kernel_libraries(registry, host, "fakegpu");
    ASSERT_FALSE(libs);
    // (Files load in name order: "fakegpu-dup" before "fakegpu.so".)
    EXPECT_EQ(libs.status().message(), base + "/kernel_plugins_dup/libgraft_kernels_fakegpu.so: type id 250 on "
                                              "backend 'fakegpu' is already provided by " +
                                              base + "/kernel_plugins_dup/libgraft_kernels_fakegpu-dup.so");
  }
  PluginRegistry registry({base + "/kernel_plugins_liar"});
  DefaultHostServices host;
  auto libs = load_kernel_libraries(registry, host, "fakegpu");
  ASSERT_FALSE(libs);
  EXPECT_EQ(libs.status().message(), base + "/kernel_plugins_liar/libgraft_kernels_fakegpu-liar.so: a kernel library "
                                            "for backend 'fakegpu' by its name computes on backend 'other'");
}

// `graft plugins` says what a kernel library brings: its backend, its types, its stores.
TEST(KernelLibraries, GraftPluginsListsWhatALibraryBrings) {
  auto r = run_command(std::string(GRAFT_EXE) + " plugins --plugin-dir " + KERNEL_PLUGIN_DIR);
  EXPECT_NE(r.output.find("kernels  fakegpu"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("\n         kernels for backend fakegpu: type 250; the device KV store\n"), std::string::npos)
      << r.output;
}
