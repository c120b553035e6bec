// Synthetic models written through the library: metadata, tensors, values, determinism, and
// quantized output through a weight-format plugin (the toy "test8" format).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>

#include "synth/synth_model.hpp"
#include "synth/synth_values.hpp"
#include "test_util.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::synth {
namespace {

constexpr TypeId kTest8 = 250;

SynthConfig tiny(const std::string& arch) {
  SynthConfig c;
  c.arch = arch;
  apply_preset(*find_preset("tiny"), c);
  return c;
}

std::vector<std::uint8_t> read_all(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

struct Written {
  std::unique_ptr<SynthTypes> types;
  std::shared_ptr<const gguf::File> file;
};

Written write(const SynthConfig& cfg, const std::filesystem::path& path, unsigned threads = 1) {
  Written w;
  auto types = resolve_types(cfg, {FAKE_PLUGIN_DIR});
  EXPECT_TRUE(types) << types.status().message();
  if (!types) return w;
  w.types = std::move(*types);
  auto summary = write_model(cfg, *w.types, path, threads);
  EXPECT_TRUE(summary) << summary.status().message();
  if (!summary) return w;
  EXPECT_EQ(summary->parameters, parameter_count(cfg));
  auto file = gguf::File::open(path, w.types->catalog->table());
  EXPECT_TRUE(file) << file.status().message();
  if (file) w.file = *file;
  return w;
}

// name -> shape every tiny model must have.
std::map<std::string, std::vector<std::uint64_t>> expected_tensors(const SynthConfig& c) {
  const std::uint64_t e = 64, q = 64, kv = 32, ff = 128, v = 512, hd = 16;
  std::map<std::string, std::vector<std::uint64_t>> m = {
      {"token_embd.weight", {e, v}}, {"output_norm.weight", {e}}};
  if (!c.tied) m["output.weight"] = {e, v};
  for (int l = 0; l < 2; ++l) {
    const std::string b = "blk." + std::to_string(l) + ".";
    m[b + "attn_norm.weight"] = {e};
    m[b + "attn_q.weight"] = {e, q};
    m[b + "attn_k.weight"] = {e, kv};
    m[b + "attn_v.weight"] = {e, kv};
    m[b + "attn_output.weight"] = {q, e};
    m[b + "ffn_norm.weight"] = {e};
    m[b + "ffn_gate.weight"] = {e, ff};
    m[b + "ffn_up.weight"] = {e, ff};
    m[b + "ffn_down.weight"] = {ff, e};
    if (c.arch == "qwen3") {
      m[b + "attn_q_norm.weight"] = {hd};
      m[b + "attn_k_norm.weight"] = {hd};
    }
  }
  return m;
}

void check_model(const SynthConfig& cfg, const gguf::File& f, TypeId matrix_type) {
  const std::string a = cfg.arch;
  EXPECT_EQ(f.get_string("general.architecture"), a);
  EXPECT_TRUE(f.get_string("general.name"));
  EXPECT_EQ(f.get_int("general.alignment"), 32);
  EXPECT_EQ(f.get_int(a + ".block_count"), 2);
  EXPECT_EQ(f.get_int(a + ".context_length"), 2048);
  EXPECT_EQ(f.get_int(a + ".embedding_length"), 64);
  EXPECT_EQ(f.get_int(a + ".feed_forward_length"), 128);
  EXPECT_EQ(f.get_int(a + ".attention.head_count"), 4);
  EXPECT_EQ(f.get_int(a + ".attention.head_count_kv"), 2);
  if (a == "llama") {
    EXPECT_FLOAT_EQ(static_cast<float>(*f.get_real("llama.attention.layer_norm_rms_epsilon")), 1e-5f);
    EXPECT_FLOAT_EQ(static_cast<float>(*f.get_real("llama.rope.freq_base")), 10000.0f);
    EXPECT_EQ(f.get_int("llama.rope.dimension_count"), 16);
    EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "llama-bpe");
    EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), true);
  } else {
    EXPECT_FLOAT_EQ(static_cast<float>(*f.get_real("qwen3.attention.layer_norm_rms_epsilon")), 1e-6f);
    EXPECT_FLOAT_EQ(static_cast<float>(*f.get_real("qwen3.rope.freq_base")), 1e6f);
    EXPECT_EQ(f.get_int("qwen3.attention.key_length"), 16);
    EXPECT_EQ(f.get_int("qwen3.attention.value_length"), 16);
    EXPECT_EQ(f.get_string("tokenizer.ggml.pre"), "qwen2");
    EXPECT_EQ(f.get_bool("tokenizer.ggml.add_bos_token"), false);
  }
  EXPECT_EQ(f.get_string("tokenizer.ggml.model"), "gpt2");
  EXPECT_EQ(f.get_int("tokenizer.ggml.eos_token_id"), 509);
  EXPECT_EQ(f.find("general.quantization_version") != nullptr, matrix_type != type_id::f32);

  const auto want = expected_tensors(cfg);
  EXPECT_EQ(f.tensors().size(), want.size());
  for (const auto& [name, shape] : want) {
    const gguf::TensorInfo* t = f.tensor(name);
    ASSERT_NE(t, nullptr) << name;
    ASSERT_EQ(t->n_dims, shape.size()) << name;
    for (std::size_t j = 0; j < shape.size(); ++j) EXPECT_EQ(t->ne[j], shape[j]) << name;
    const bool norm = name.find("norm") != std::string::npos;
    EXPECT_EQ(t->type, norm ? type_id::f32 : matrix_type) << name;
  }

  auto tok = Tokenizer::from_gguf(f);
  ASSERT_TRUE(tok) << tok.status().message();
  EXPECT_EQ((*tok)->n_vocab(), 512u);
  const std::string text = "def hello(world):\n    return 42\n";
  auto ids = (*tok)->encode(text, {});
  ASSERT_TRUE(ids) << ids.status().message();
  EXPECT_EQ((*tok)->decode(*ids), text);
}

TEST(SynthModel, TinyLlamaF32) {
  TempDir dir;
  const auto cfg = tiny("llama");
  auto w = write(cfg, dir.path() / "m.gguf");
  ASSERT_TRUE(w.file);
  check_model(cfg, *w.file, type_id::f32);
}

TEST(SynthModel, TinyQwen3F32Tied) {
  TempDir dir;
  auto cfg = tiny("qwen3");
  cfg.tied = true;
  auto w = write(cfg, dir.path() / "m.gguf");
  ASSERT_TRUE(w.file);
  check_model(cfg, *w.file, type_id::f32);
}

TEST(SynthModel, TinyLlamaAndQwen3InAPluginType) {
  for (const char* arch : {"llama", "qwen3"}) {
    TempDir dir;
    auto cfg = tiny(arch);
    cfg.type = "test8";
    auto w = write(cfg, dir.path() / "m.gguf");
    ASSERT_TRUE(w.file) << arch;
    check_model(cfg, *w.file, kTest8);
    EXPECT_EQ(w.file->get_int("general.quantization_version"), 2);

    // The stored blocks dequantize back to the generator's values (8-bit: within half a step).
    const gguf::TensorInfo* t = w.file->tensor("blk.1.ffn_down.weight");
    ASSERT_NE(t, nullptr);
    std::vector<float> back(t->elements());
    ASSERT_TRUE(w.types->catalog->format(kTest8)->dequantize(kTest8, t->data, back.data(),
                                                                 static_cast<std::int64_t>(back.size())).ok());
    const ValueStream values(cfg.seed, t->name, TensorRole::matrix, t->ne[0]);
    float amax = 0;
    for (std::size_t i = 0; i < back.size(); ++i) amax = std::max(amax, std::fabs(values.at(i)));
    for (std::size_t i = 0; i < back.size(); ++i) ASSERT_NEAR(back[i], values.at(i), amax / 127) << i;
  }
}

TEST(SynthModel, EmbeddingTypeCanDiffer) {
  TempDir dir;
  auto cfg = tiny("llama");
  cfg.type = "test8";
  cfg.embd_type = "f32";
  auto w = write(cfg, dir.path() / "m.gguf");
  ASSERT_TRUE(w.file);
  EXPECT_EQ(w.file->tensor("token_embd.weight")->type, type_id::f32);
  EXPECT_EQ(w.file->tensor("output.weight")->type, kTest8);
}

TEST(SynthModel, ByteIdenticalForTheSameArgumentsDifferentForAnotherSeed) {
  TempDir dir;
  auto cfg = tiny("qwen3");
  ASSERT_TRUE(write(cfg, dir.path() / "a.gguf").file);
  ASSERT_TRUE(write(cfg, dir.path() / "b.gguf").file);
  cfg.seed = 1;
  ASSERT_TRUE(write(cfg, dir.path() / "c.gguf").file);
  const auto a = read_all(dir.path() / "a.gguf");
  EXPECT_EQ(a, read_all(dir.path() / "b.gguf"));
  const auto c = read_all(dir.path() / "c.gguf");
  ASSERT_EQ(a.size(), c.size());
  EXPECT_NE(a, c);
}

// 20000 x 64 embeddings are 1.28M elements: two chunks on one thread, one in four parts on four;
// the other tensors are a single chunk split unevenly (or one row on one thread).
TEST(SynthModel, ByteIdenticalWhateverTheThreadCount) {
  TempDir dir;
  auto cfg = tiny("llama");
  cfg.n_vocab = 20000;
  for (const std::string type : {"f32", "test8"}) {
    cfg.type = type;
    ASSERT_TRUE(write(cfg, dir.path() / "t1.gguf", 1).file);
    ASSERT_TRUE(write(cfg, dir.path() / "t4.gguf", 4).file);
    EXPECT_EQ(read_all(dir.path() / "t1.gguf"), read_all(dir.path() / "t4.gguf")) << type;
  }
}

TEST(SynthModel, TensorValuesDependOnlyOnSeedNameAndIndex) {
  TempDir dir;
  auto two = tiny("llama");
  auto three = two;
  three.n_layer = 3;
  three.tied = true;
  auto a = write(two, dir.path() / "a.gguf");
  auto b = write(three, dir.path() / "b.gguf");
  ASSERT_TRUE(a.file && b.file);
  const auto* ta = a.file->tensor("blk.1.attn_q.weight");
  const auto* tb = b.file->tensor("blk.1.attn_q.weight");
  ASSERT_TRUE(ta && tb);
  ASSERT_EQ(ta->bytes, tb->bytes);
  EXPECT_EQ(std::memcmp(ta->data, tb->data, ta->bytes), 0);
}

TEST(SynthModel, ValueScales) {
  // Matrices: mean 0, standard deviation 1/sqrt(fan_in); norms: 1 with a little noise.
  const ValueStream m(0, "blk.0.ffn_down.weight", TensorRole::matrix, 256);
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double x = m.at(static_cast<std::uint64_t>(i));
    sum += x;
    sq += x * x;
  }
  const double mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
  EXPECT_NEAR(mean, 0.0, 0.002);
  EXPECT_NEAR(sd, 1.0 / 16, 0.02 / 16);

  const ValueStream norm(0, "output_norm.weight", TensorRole::norm, 64);
  float lo = 2, hi = 0;
  for (int i = 0; i < 1000; ++i) {
    lo = std::min(lo, norm.at(static_cast<std::uint64_t>(i)));
    hi = std::max(hi, norm.at(static_cast<std::uint64_t>(i)));
  }
  EXPECT_GT(lo, 0.85f);
  EXPECT_LT(hi, 1.15f);
  EXPECT_LT(lo, hi);
  // Pinned values: a change here changes every synthetic model.
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(splitmix64_mix(0x9E3779B97F4A7C15ull), 0xe220a8397b1dcdafull);
}

TEST(SynthModel, PresetParameterCounts) {
  auto count = [](const char* name) {
    SynthConfig c;
    apply_preset(*find_preset(name), c);
    EXPECT_TRUE(validate(c).ok()) << name << ": " << validate(c).message();
    return parameter_count(c);
  };
  // The real Qwen3 models' published totals (tied embeddings counted once).
  EXPECT_EQ(count("qwen3-0.6b"), 596049920u);
  EXPECT_EQ(count("qwen3-1.7b"), 1720574976u);
  EXPECT_EQ(count("qwen3-8b"), 8190735360u);
  // Qwen3.6-27B: 27B with its untied output (llama.cpp's size label for 64 qwen35 layers).
  const auto q36 = count("qwen36-27b");
  EXPECT_GT(q36, 26'000'000'000u);
  EXPECT_LT(q36, 28'500'000'000u);
  EXPECT_EQ(count("bonsai-27b"), q36);
  const auto bench = count("bench-250m");
  EXPECT_GT(bench, 240'000'000u);
  EXPECT_LT(bench, 260'000'000u);
}

TEST(SynthModel, ValidationMessages) {
  auto cfg = tiny("llama");
  cfg.arch = "gpt9";
  EXPECT_EQ(validate(cfg).message(), "unknown --arch 'gpt9' (supported: llama, qwen3, qwen35)");
  cfg = tiny("qwen35");  // a hybrid's delta-net shapes come from its presets
  EXPECT_EQ(validate(cfg).message(), "--arch qwen35 needs a qwen35 preset (qwen35-tiny, qwen35-2b, qwen36-27b, bonsai-27b)");
  cfg = tiny("llama");
  cfg.n_head = 5;
  EXPECT_EQ(validate(cfg).message(), "--n-head 5 does not divide --n-embd 64 (or give --head-dim)");
  cfg.head_dim = 16;
  cfg.n_head_kv = 5;
  EXPECT_TRUE(validate(cfg).ok()) << validate(cfg).message();
  cfg.n_head_kv = 2;
  EXPECT_EQ(validate(cfg).message(), "--n-head-kv 2 does not divide --n-head 5");
  cfg = tiny("llama");
  cfg.n_vocab = 100;
  EXPECT_EQ(validate(cfg).message(), "--n-vocab 100 is too small: 256 byte tokens, 3 special tokens and at least one merge need 260");
}

TEST(SynthModel, GeometryAndMissingPlugin) {
  auto cfg = tiny("llama");
  cfg.type = "test8";
  cfg.n_ff = 100;  // not a multiple of test8's 16-element blocks
  auto types = resolve_types(cfg, {FAKE_PLUGIN_DIR});
  ASSERT_TRUE(types) << types.status().message();
  EXPECT_EQ(check_geometry(cfg, **types).message(),
            "blk.0.ffn_down.weight: rows of 100 elements are not a multiple of the test8 block size 16 (--type); "
            "pass --fallback-type T (e.g. f16) to write such tensors in another type");

  cfg = tiny("llama");
  cfg.type = "q5_1";  // a ggml type no plugin provides
  auto missing = resolve_types(cfg, {FAKE_PLUGIN_DIR});
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), Errc::not_found);
  EXPECT_EQ(missing.status().message().rfind(std::string("--type q5_1: no weight-format plugin provides this type "
                                                         "(expected libgraft_quant_q5_1.so in: ") + FAKE_PLUGIN_DIR,
                                             0),
            0u)
      << missing.status().message();
}

}  // namespace
}  // namespace graft::synth
