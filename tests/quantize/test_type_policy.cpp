// quantize::TypePolicy over a catalog built from GGUF's own type table: every rule, its order,
// and the exact error of each bad option. No plugin is loaded.
#include <gtest/gtest.h>

#include <vector>

#include "quantize/type_policy.hpp"

namespace graft::quantize {
namespace {

using V = std::vector<std::uint64_t>;
const V kMatrix{256, 512}, kNorm{256}, kOdd{100, 256};

// Writable: f32 plus the listed ids, as if their plugins were loaded.
std::unique_ptr<TypeCatalog> catalog(std::vector<TypeId> ids) {
  return TypeCatalog::for_table(gguf::TypeTable::builtin(), std::move(ids));
}
const std::vector<TypeId> kWithQ6k{type_id::f16, type_id::q8_0, type_id::q4_0, type_id::q6_k};
const std::vector<TypeId> kNoQ6k{type_id::f16, type_id::q8_0, type_id::q4_0};

TypeOptions opts(std::string type) {
  TypeOptions o;
  o.type = std::move(type);
  return o;
}

TypePolicy make(const TypeOptions& o, const TypeCatalog& c) {
  auto p = TypePolicy::create(o, c);
  EXPECT_TRUE(p) << p.status().message();
  return std::move(*p);
}

TypeId type_of(const TypePolicy& p, std::string_view name, const V& ne, bool has_output = true) {
  auto c = p.choose(name, ne, has_output);
  EXPECT_TRUE(c) << c.status().message();
  return c ? c->type : TypeId(9999);
}

std::string error_of(const TypeOptions& o, const TypeCatalog& c) {
  auto p = TypePolicy::create(o, c);
  return p ? std::string("(no error)") : p.status().message();
}

TEST(quantize_policy, EightBitTypeIsUsedEverywhereButOneDimensionalTensors) {
  auto c = catalog(kWithQ6k);
  const TypePolicy p = make(opts("q8_0"), *c);
  EXPECT_EQ(type_of(p, "blk.0.attn_q.weight", kMatrix), type_id::q8_0);
  EXPECT_EQ(type_of(p, "output.weight", kMatrix), type_id::q8_0);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix), type_id::q8_0);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix, /*has_output=*/false), type_id::q8_0);
  EXPECT_EQ(type_of(p, "blk.0.attn_norm.weight", kNorm), type_id::f32);
  EXPECT_EQ(p.choose("blk.0.attn_norm.weight", kNorm, true)->why, "1-D");
  // f16 has 16 bits per weight: no q6_k either.
  const TypePolicy h = make(opts("F16"), *c);  // names are case-insensitive
  EXPECT_EQ(type_of(h, "output.weight", kMatrix), type_id::f16);
}

// A qwen35 delta-net's convolution taps ({Kc, channels}, rows of 4) stay f32 whatever is asked,
// as llama-quantize keeps them; its other matrices follow --type.
TEST(quantize_policy, DeltaNetConvolutionStaysF32) {
  auto c = catalog(kWithQ6k);
  TypeOptions o = opts("q4_0");
  o.tensor_types = {"ssm=q8_0"};
  const TypePolicy p = make(o, *c);
  const auto conv = p.choose("blk.0.ssm_conv1d.weight", V{4, 10240}, true);
  ASSERT_TRUE(conv);
  EXPECT_EQ(conv->type, type_id::f32);
  EXPECT_EQ(conv->why, "delta-net convolution");
  EXPECT_EQ(type_of(p, "blk.0.ssm_out.weight", kMatrix), type_id::q8_0);
  EXPECT_EQ(type_of(p, "blk.0.attn_qkv.weight", kMatrix), type_id::q4_0);
}

TEST(quantize_policy, LowBitTypeKeepsTheOutputAtQ6K) {
  auto c = catalog(kWithQ6k);
  const TypePolicy p = make(opts("q4_0"), *c);
  EXPECT_EQ(type_of(p, "blk.3.ffn_down.weight", kMatrix), type_id::q4_0);
  EXPECT_EQ(type_of(p, "output.weight", kMatrix), type_id::q6_k);
  EXPECT_EQ(p.choose("output.weight", kMatrix, true)->why, "output default (q6_k below 6 bits/weight)");
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix, /*has_output=*/true), type_id::q4_0);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix, /*has_output=*/false), type_id::q6_k);
  EXPECT_EQ(p.choose("token_embd.weight", kMatrix, false)->why, "output default (q6_k below 6 bits/weight) (tied output)");
}

TEST(quantize_policy, SynthOptionKeepsTheOutputAtType) {
  auto c = catalog(kNoQ6k);
  TypeOptions o = opts("q4_0");
  o.q6_k_output_default = false;
  const TypePolicy p = make(o, *c);
  EXPECT_EQ(type_of(p, "output.weight", kMatrix), type_id::q4_0);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix, false), type_id::q4_0);
}

TEST(quantize_policy, MissingQ6KPluginAsksForOutputType) {
  auto c = catalog(kNoQ6k);
  const TypePolicy p = make(opts("q4_0"), *c);
  auto r = p.choose("output.weight", kMatrix, true);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::not_found);
  EXPECT_EQ(r.status().message(),
            "output.weight: the output projection defaults to q6_k when --type has under 6 bits per weight (q4_0 has "
            "4.5), but no weight-format plugin provides q6_k: pass --output-type T (e.g. --output-type q8_0, or "
            "--output-type q4_0 to keep it at --type)");
  EXPECT_EQ(type_of(p, "blk.0.attn_q.weight", kMatrix), type_id::q4_0);  // other tensors are unaffected
}

TEST(quantize_policy, OutputAndEmbeddingTypes) {
  auto c = catalog(kNoQ6k);
  TypeOptions o = opts("q4_0");
  o.output_type = "q8_0";
  const TypePolicy p = make(o, *c);
  EXPECT_EQ(type_of(p, "output.weight", kMatrix), type_id::q8_0);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix, true), type_id::q4_0);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix, false), type_id::q8_0);  // tied: the output rule
  o.embd_type = "f16";  // --embd-type wins over the output rule for a tied embedding
  const TypePolicy q = make(o, *c);
  EXPECT_EQ(type_of(q, "token_embd.weight", kMatrix, false), type_id::f16);
  EXPECT_EQ(type_of(q, "token_embd.weight", kMatrix, true), type_id::f16);
  EXPECT_EQ(type_of(q, "output.weight", kMatrix), type_id::q8_0);
}

TEST(quantize_policy, FirstMatchingTensorTypeWinsOverEveryOtherRule) {
  auto c = catalog(kNoQ6k);
  TypeOptions o = opts("q4_0");
  o.output_type = "q8_0";
  o.embd_type = "q8_0";
  o.tensor_types = {"attn_(k|v)=f16", "attn=q8_0", "^output\\.=f32", "embd=q4_0", "norm=f16"};
  const TypePolicy p = make(o, *c);
  EXPECT_EQ(type_of(p, "blk.0.attn_k.weight", kMatrix), type_id::f16);
  EXPECT_EQ(type_of(p, "blk.0.attn_v.weight", kMatrix), type_id::f16);
  EXPECT_EQ(type_of(p, "blk.0.attn_q.weight", kMatrix), type_id::q8_0);
  EXPECT_EQ(p.choose("blk.0.attn_q.weight", kMatrix, true)->why, "--tensor-type attn=q8_0");
  EXPECT_EQ(type_of(p, "output.weight", kMatrix), type_id::f32);
  EXPECT_EQ(type_of(p, "token_embd.weight", kMatrix), type_id::q4_0);
  EXPECT_EQ(type_of(p, "blk.0.ffn_up.weight", kMatrix), type_id::q4_0);
  EXPECT_EQ(type_of(p, "blk.0.attn_norm.weight", kNorm), type_id::f32);  // 1-D stays f32
}

TEST(quantize_policy, RowsThatAreNotWholeBlocks) {
  auto c = catalog(kNoQ6k);
  const TypePolicy p = make(opts("q4_0"), *c);
  auto r = p.choose("blk.0.ffn_down.weight", kOdd, true);
  ASSERT_FALSE(r);
  EXPECT_EQ(r.status().code(), Errc::invalid_argument);
  EXPECT_EQ(r.status().message(),
            "blk.0.ffn_down.weight: rows of 100 elements are not a multiple of the q4_0 block size 32 (--type); pass "
            "--fallback-type T (e.g. f16) to write such tensors in another type");

  TypeOptions o = opts("q4_0");
  o.fallback_type = "f16";
  const TypePolicy f = make(o, *c);
  auto ok = f.choose("blk.0.ffn_down.weight", kOdd, true);
  ASSERT_TRUE(ok) << ok.status().message();
  EXPECT_EQ(ok->type, type_id::f16);
  EXPECT_EQ(ok->why, "--fallback-type (rows of 100 do not fit q4_0)");
  EXPECT_EQ(type_of(f, "blk.0.ffn_up.weight", kMatrix), type_id::q4_0);

  o.fallback_type = "q8_0";
  const TypePolicy g = make(o, *c);
  EXPECT_EQ(g.choose("blk.0.ffn_down.weight", kOdd, true).status().message(),
            "blk.0.ffn_down.weight: rows of 100 elements are not a multiple of the q4_0 block size 32 (--type), nor of "
            "the --fallback-type q8_0 block size 32");
}

TEST(quantize_policy, BadOptionsAreOneLineNamingTheFlag) {
  auto c = catalog(kNoQ6k);
  EXPECT_EQ(error_of(opts("q9_9"), *c),
            "--type q9_9: unknown type (available: f32, f16, q8_0, q4_0; a plugin type needs libgraft_quant_q9_9.so "
            "in: (no folders))");
  EXPECT_EQ(TypePolicy::create(opts("q9_9"), *c).status().code(), Errc::invalid_argument);
  EXPECT_EQ(error_of(opts("q5_1"), *c),
            "--type q5_1: no weight-format plugin provides this type (expected libgraft_quant_q5_1.so in: (no "
            "folders); add --plugin-dir DIR)");
  EXPECT_EQ(TypePolicy::create(opts("q5_1"), *c).status().code(), Errc::not_found);

  TypeOptions o = opts("q8_0");
  o.output_type = "q6_k";
  EXPECT_EQ(error_of(o, *c),
            "--output-type q6_k: no weight-format plugin provides this type (expected libgraft_quant_q6_k.so in: (no "
            "folders); add --plugin-dir DIR)");
  o = opts("q8_0");
  o.embd_type = "int3";
  EXPECT_EQ(error_of(o, *c).rfind("--embd-type int3: unknown type (", 0), 0u);
  o = opts("q8_0");
  o.fallback_type = "q1_0";
  EXPECT_EQ(error_of(o, *c).rfind("--fallback-type q1_0: no weight-format plugin provides this type", 0), 0u);

  o = opts("q8_0");
  o.tensor_types = {"attn_v"};
  EXPECT_EQ(error_of(o, *c), "--tensor-type 'attn_v': expected REGEX=TYPE");
  o.tensor_types = {"=q8_0"};
  EXPECT_EQ(error_of(o, *c), "--tensor-type '=q8_0': expected REGEX=TYPE");
  o.tensor_types = {"attn_v="};
  EXPECT_EQ(error_of(o, *c), "--tensor-type 'attn_v=': expected REGEX=TYPE");
  o.tensor_types = {"attn_v=q3"};
  EXPECT_EQ(error_of(o, *c).rfind("--tensor-type attn_v=q3: unknown type (", 0), 0u);
  o.tensor_types = {"attn_[qk=q8_0"};
  const std::string bad = error_of(o, *c);
  EXPECT_EQ(bad.rfind("--tensor-type 'attn_[qk=q8_0': bad regular expression 'attn_[qk': ", 0), 0u) << bad;
  EXPECT_EQ(bad.find('\n'), std::string::npos);
}

}  // namespace
}  // namespace graft::quantize
