// gguf_fuzz_seeds DIR: writes a handful of small valid GGUF files for the fuzzers to mutate: value
// types and tensors (gguf_fuzz), and two model headers with working tokenizers, SentencePiece and
// byte-level BPE (gguf_vocab_fuzz).
#include <cstdio>
#include <filesystem>
#include <string>

#include "gguf/gguf_writer.hpp"
#include "tokenizer/synthetic_vocab.hpp"

using namespace graft::gguf;

namespace {

std::vector<std::uint8_t> bytes(std::size_t n) {
  std::vector<std::uint8_t> d(n);
  for (std::size_t k = 0; k < n; ++k) d[k] = static_cast<std::uint8_t>(k * 31 + 7);
  return d;
}

// general.* and the <arch>.* hyperparameters ModelParams reads (n_vocab comes from token_embd.weight).
void model_header(Writer& w, const std::string& arch) {
  w.add_string("general.architecture", arch);
  w.add_string("general.name", "seed");
  w.add_u32(arch + ".embedding_length", 8);
  w.add_u32(arch + ".block_count", 2);
  w.add_u32(arch + ".attention.head_count", 2);
  w.add_u32(arch + ".attention.head_count_kv", 1);
  w.add_u32(arch + ".feed_forward_length", 16);
  w.add_u32(arch + ".context_length", 64);
  w.add_u32(arch + ".rope.dimension_count", 4);
  w.add_f32(arch + ".rope.freq_base", 10000.0f);
  w.add_f32(arch + ".attention.layer_norm_rms_epsilon", 1e-6f);
}

// tokenizer.ggml.model, .pre, .tokens, .token_type, .scores and .merges of a vocabulary.
void add_vocab(Writer& w, const graft::VocabData& d) {
  w.add_string("tokenizer.ggml.model", d.model);
  w.add_string("tokenizer.ggml.pre", d.pre);
  w.add_string_array("tokenizer.ggml.tokens", d.tokens);
  w.add_i32_array("tokenizer.ggml.token_type", d.token_types);
  if (!d.scores.empty()) w.add_f32_array("tokenizer.ggml.scores", d.scores);
  if (!d.merges.empty()) w.add_string_array("tokenizer.ggml.merges", d.merges);
}

bool save(const Writer& w, const std::filesystem::path& p) {
  graft::Status s = w.write(p);
  if (!s.ok()) std::fprintf(stderr, "gguf_fuzz_seeds: %s\n", s.message().c_str());
  return s.ok();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: gguf_fuzz_seeds DIR\n");
    return 2;
  }
  std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  bool ok = true;

  Writer empty;
  ok &= save(empty, dir / "empty.gguf");

  Writer scalars;
  scalars.add("u8", Value::from_uint(ValueType::u8, 1));
  scalars.add("i8", Value::from_int(ValueType::i8, -1));
  scalars.add("u16", Value::from_uint(ValueType::u16, 2));
  scalars.add("i16", Value::from_int(ValueType::i16, -2));
  scalars.add_u32("u32", 3);
  scalars.add_i32("i32", -3);
  scalars.add_f32("f32", 0.5f);
  scalars.add_bool("bool", true);
  scalars.add_string("string", "text");
  scalars.add_u64("u64", 4);
  scalars.add("i64", Value::from_int(ValueType::i64, -4));
  scalars.add("f64", Value::from_real(ValueType::f64, 0.25));
  ok &= save(scalars, dir / "scalars.gguf");

  Writer arrays;
  arrays.add_string_array("tokenizer.ggml.tokens", {"a", "b", "<s>"});
  arrays.add_i32_array("tokenizer.ggml.token_type", {1, 1, 3});
  arrays.add_f32_array("tokenizer.ggml.scores", {0.f, -1.f, -2.f});
  arrays.add("nested", Value::from_array(ValueType::array, {Value::from_array(ValueType::u8, {Value::from_uint(ValueType::u8, 9)})}));
  ok &= save(arrays, dir / "arrays.gguf");

  Writer model;
  model.set_alignment(64);
  model.add_string("general.architecture", "llama");
  model.add_u32("general.quantization_version", 2);
  std::uint64_t a[] = {32, 2}, b[] = {256}, c[] = {4, 2, 1, 1}, d[] = {128};
  ok &= model.add_tensor("blk.0.attn_q.weight", a, graft::type_id::q4_0, bytes(36)).ok();
  ok &= model.add_tensor("blk.0.ffn_up.weight", b, graft::type_id::q4_k, bytes(144)).ok();
  ok &= model.add_tensor("output_norm.weight", c, graft::type_id::f32, bytes(32)).ok();
  ok &= model.add_tensor("token_embd.weight", d, graft::type_id::q1_0, bytes(18)).ok();
  ok &= save(model, dir / "model.gguf");

  // SentencePiece (tests/tokenizer/synthetic_vocab.hpp: <unk>, <s>, </s>, byte tokens) with a few
  // scored pieces and a control token.
  Writer spm;
  model_header(spm, "llama");
  std::vector<std::pair<std::string, float>> pieces;
  for (const char* piece : {"\xe2\x96\x81", "\xe2\x96\x81H", "ello", "\xe2\x96\x81world", "12", ",", "<|im_start|>"})
    pieces.emplace_back(piece, -static_cast<float>(graft::test::kSpmFirstPiece + pieces.size() + 1));
  graft::VocabData sp = graft::test::spm_vocab(pieces);
  sp.token_types.back() = static_cast<std::int32_t>(graft::TokenType::control);
  add_vocab(spm, sp);
  spm.add_u32("tokenizer.ggml.bos_token_id", 1);
  spm.add_u32("tokenizer.ggml.eos_token_id", 2);
  spm.add_u32("tokenizer.ggml.unknown_token_id", 0);
  spm.add_bool("tokenizer.ggml.add_bos_token", true);
  std::uint64_t embd[] = {8, 4};
  ok &= spm.add_tensor("token_embd.weight", embd, graft::type_id::f32, bytes(128)).ok();
  ok &= save(spm, dir / "llama_spm.gguf");

  // Byte-level BPE (synthetic_vocab.hpp: the 256 byte tokens first) with Qwen's pre-tokenizer,
  // merges and special tokens.
  Writer bpe;
  model_header(bpe, "qwen3");
  graft::VocabData bp = graft::test::bpe_vocab(
      {"He", "ll", "Hell", "Hello", "\xc4\xa0w", "or", "\xc4\xa0wor", "\xc4\xa0worl", "\xc4\xa0world", "<|endoftext|>",
       "<|im_start|>", "<|im_end|>"},
      {"H e", "l l", "He ll", "Hell o", "\xc4\xa0 w", "o r", "\xc4\xa0w or", "\xc4\xa0wor l", "\xc4\xa0worl d"},
      "qwen2");
  for (std::size_t id = 265; id < bp.token_types.size(); ++id)  // the three special tokens
    bp.token_types[id] = static_cast<std::int32_t>(graft::TokenType::control);
  add_vocab(bpe, bp);
  bpe.add_u32("tokenizer.ggml.eos_token_id", 265);
  bpe.add_u32("tokenizer.ggml.padding_token_id", 265);
  bpe.add_bool("tokenizer.ggml.add_bos_token", false);
  ok &= bpe.add_tensor("token_embd.weight", embd, graft::type_id::f32, bytes(128)).ok();
  ok &= save(bpe, dir / "qwen3_bpe.gguf");
  return ok ? 0 : 1;
}
