// `graft quantize` reads whatever the loaded plugins dequantize, and says which plugin is missing
// when it cannot.
#include <gtest/gtest.h>

#include <cstring>

#include "gguf/gguf_writer.hpp"
#include "quantize/type_catalog.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

constexpr TypeId kTest8 = 250;  // tests/plugin_host/fake_plugins: 16 elements in 20 bytes

CommandResult graft_cmd(const std::string& args) { return run_command(std::string(GRAFT_EXE) + " " + args); }

TEST(quantize_inputs, PluginOnlyInputTypeIsDequantizedByItsPlugin) {
  TempDir dir;
  const std::string in = (dir.path() / "t8.gguf").string(), out = (dir.path() / "q8.gguf").string();
  const std::string fake = std::string(" --plugin-dir ") + FAKE_PLUGIN_DIR;
  ASSERT_EQ(graft_cmd("synth --arch llama --type test8 --seed 5 --out " + in + fake).exit_code, 0);
  auto r = graft_cmd("quantize " + in + " " + out + " --type q8_0" + fake);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  // token_embd, output and 7 matrices in each of the 2 blocks.
  EXPECT_NE(r.output.find("warning: requantizing 16 tensors from an already quantized type"), std::string::npos)
      << r.output;

  auto catalog = quantize::TypeCatalog::load({FAKE_PLUGIN_DIR});
  ASSERT_TRUE(catalog) << catalog.status().message();
  const auto& c = **catalog;
  auto a = gguf::File::open(in, c.table()), b = gguf::File::open(out, c.table());
  ASSERT_TRUE(a && b);
  int checked = 0;
  for (const auto& t : (*a)->tensors()) {
    if (t.n_dims == 1) continue;
    ASSERT_EQ(t.type, kTest8);
    const auto* q = (*b)->tensor(t.name);
    ASSERT_NE(q, nullptr);
    ASSERT_EQ(q->type, type_id::q8_0);
    std::vector<float> f(t.elements());
    ASSERT_TRUE(c.format(kTest8)->dequantize(kTest8, t.data, f.data(), static_cast<std::int64_t>(f.size())).ok());
    std::vector<std::uint8_t> want(q->bytes);
    ASSERT_TRUE(c.format(type_id::q8_0)
                    ->quantize(type_id::q8_0, f.data(), want.data(), static_cast<std::int64_t>(t.elements() / t.ne[0]),
                               static_cast<std::int64_t>(t.ne[0]), nullptr)
                    .ok());
    EXPECT_EQ(std::memcmp(want.data(), q->data, want.size()), 0) << t.name;
    ++checked;
  }
  EXPECT_EQ(checked, 16);
}

TEST(quantize_inputs, InputTypeWithoutPluginNamesThePlugin) {
  TempDir dir;
  const std::string in = (dir.path() / "q51.gguf").string(), out = (dir.path() / "o.gguf").string();
  gguf::Writer w;
  w.add_string("general.architecture", "llama");
  const std::uint64_t ne[] = {64, 4};
  std::vector<std::uint8_t> bytes(4 * 2 * 24, 0);  // q5_1: 32 elements in 24 bytes
  ASSERT_TRUE(w.add_tensor("blk.0.attn_q.weight", ne, type_id::q5_1, bytes).ok());
  ASSERT_TRUE(w.write(in).ok());
  auto r = graft_cmd("quantize " + in + " " + out + " --type q8_0");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.output,
            "graft quantize: blk.0.attn_q.weight: cannot read its type q5_1: no weight-format plugin provides it "
            "(expected libgraft_quant_q5_1.so; add --plugin-dir DIR)\n");
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
