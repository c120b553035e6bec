// `graft synth` through the shared type policy: --output-type, --tensor-type, --fallback-type, and
// the one difference from quantize (the output follows --type: no q6_k default).
#include <gtest/gtest.h>

#include "gguf/gguf_file.hpp"
#include "quantize/type_catalog.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

CommandResult synth(const std::string& args) { return run_command(std::string(GRAFT_EXE) + " synth " + args); }

std::shared_ptr<const gguf::File> open_with_plugins(const std::string& path) {
  auto c = quantize::TypeCatalog::load({GRAFT_PLUGIN_DIR});
  EXPECT_TRUE(c) << c.status().message();
  if (!c) return nullptr;
  auto f = gguf::File::open(path, (*c)->table());
  EXPECT_TRUE(f) << f.status().message();
  return f ? *f : nullptr;
}

TEST(quantize_synth, FlagsChooseEachTensorsType) {
  TempDir dir;
  const auto out = (dir.path() / "m.gguf").string();
  auto r = synth("--arch qwen3 --type q4_0 --output-type q8_0 --embd-type f16 --tensor-type 'attn_(k|v)=q8_0' "
                 "--tensor-type attn=f32 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto f = open_with_plugins(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->tensor("token_embd.weight")->type, type_id::f16);
  EXPECT_EQ(f->tensor("output.weight")->type, type_id::q8_0);
  EXPECT_EQ(f->tensor("output_norm.weight")->type, type_id::f32);
  EXPECT_EQ(f->tensor("blk.1.attn_k.weight")->type, type_id::q8_0);
  EXPECT_EQ(f->tensor("blk.1.attn_v.weight")->type, type_id::q8_0);
  EXPECT_EQ(f->tensor("blk.1.attn_q.weight")->type, type_id::f32);
  EXPECT_EQ(f->tensor("blk.1.attn_output.weight")->type, type_id::f32);
  EXPECT_EQ(f->tensor("blk.1.attn_q_norm.weight")->type, type_id::f32);
  EXPECT_EQ(f->tensor("blk.1.ffn_up.weight")->type, type_id::q4_0);
  EXPECT_EQ(f->get_int("general.quantization_version"), 2);
}

TEST(quantize_synth, OutputFollowsTypeWithoutQ6KDefault) {
  TempDir dir;
  const auto out = (dir.path() / "m.gguf").string();
  auto r = synth("--arch llama --type q4_0 --tied --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto f = open_with_plugins(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->tensor("token_embd.weight")->type, type_id::q4_0);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight")->type, type_id::q4_0);
}

TEST(quantize_synth, FallbackTypeForRowsThatAreNotWholeBlocks) {
  TempDir dir;
  const auto out = (dir.path() / "m.gguf").string();
  auto r = synth("--arch llama --n-ff 100 --type q8_0 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output,
            "graft synth: blk.0.ffn_down.weight: rows of 100 elements are not a multiple of the q8_0 block size 32 "
            "(--type); pass --fallback-type T (e.g. f16) to write such tensors in another type\n");
  r = synth("--arch llama --n-ff 100 --type q8_0 --fallback-type bf16 --out " + out);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  auto f = open_with_plugins(out);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->tensor("blk.0.ffn_down.weight")->type, type_id::bf16);
  EXPECT_EQ(f->tensor("blk.0.ffn_up.weight")->type, type_id::q8_0);
}

TEST(quantize_synth, BadFlagsAreOneLine) {
  TempDir dir;
  const auto out = (dir.path() / "m.gguf").string();
  auto r = synth("--arch llama --tensor-type attn_q --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output, "graft synth: --tensor-type 'attn_q': expected REGEX=TYPE\n");
  r = synth("--arch llama --type q8_0 --output-type q9_9 --out " + out);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_EQ(r.output.rfind("graft synth: --output-type q9_9: unknown type (available: f32, ", 0), 0u) << r.output;
  EXPECT_FALSE(std::filesystem::exists(out));
}

}  // namespace
