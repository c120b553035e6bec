// Real vocabularies written by llama.cpp's tools: the reader must accept them as they are.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "gguf/gguf_file.hpp"

namespace fs = std::filesystem;
using namespace graft::gguf;

namespace {

fs::path vocab(const std::string& name) { return fs::path(GRAFT_TESTDATA_DIR) / "vocab" / name; }

std::shared_ptr<const File> open_or_skip(const std::string& name) {
  fs::path p = vocab(name);
  if (!fs::exists(p)) return nullptr;
  auto f = File::open(p);
  EXPECT_TRUE(f.has_value()) << (f ? "" : f.status().message());
  return f ? *f : nullptr;
}

}  // namespace

TEST(ggufVocab, Gpt2) {
  if (!fs::exists(vocab("ggml-vocab-gpt-2.gguf"))) GTEST_SKIP() << "no " << vocab("ggml-vocab-gpt-2.gguf");
  auto f = open_or_skip("ggml-vocab-gpt-2.gguf");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->version(), 3u);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_TRUE(f->tensors().empty());
  EXPECT_EQ(f->file_size(), fs::file_size(vocab("ggml-vocab-gpt-2.gguf")));
  EXPECT_EQ(f->get_string("general.architecture"), "gpt2");
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "gpt2");
  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->size(), 50257u);
  EXPECT_EQ((*tokens)[0], "!");
  EXPECT_EQ((*tokens)[220], "\xC4\xA0");  // "Ġ": the byte-level space
  auto merges = f->get_string_array("tokenizer.ggml.merges");
  ASSERT_TRUE(merges);
  EXPECT_GT(merges->size(), 40000u);
  auto types = f->get_int_array("tokenizer.ggml.token_type");
  ASSERT_TRUE(types);
  EXPECT_EQ(types->size(), tokens->size());
  // Wrong-typed getters refuse rather than convert.
  EXPECT_FALSE(f->get_int("tokenizer.ggml.model"));
  EXPECT_FALSE(f->get_int_array("tokenizer.ggml.tokens"));
  EXPECT_FALSE(f->get_string("no.such.key"));
  EXPECT_EQ(f->find("no.such.key"), nullptr);
}

TEST(ggufVocab, LlamaSpm) {
  if (!fs::exists(vocab("ggml-vocab-llama-spm.gguf"))) GTEST_SKIP() << "no " << vocab("ggml-vocab-llama-spm.gguf");
  auto f = open_or_skip("ggml-vocab-llama-spm.gguf");
  ASSERT_TRUE(f);
  EXPECT_EQ(f->get_string("tokenizer.ggml.model"), "llama");
  auto tokens = f->get_string_array("tokenizer.ggml.tokens");
  ASSERT_TRUE(tokens);
  EXPECT_EQ(tokens->size(), 32000u);
  EXPECT_EQ((*tokens)[1], "<s>");
  auto scores = f->get_real_array("tokenizer.ggml.scores");
  ASSERT_TRUE(scores);
  EXPECT_EQ(scores->size(), tokens->size());
  EXPECT_EQ(f->get_int("tokenizer.ggml.bos_token_id"), 1);
  EXPECT_EQ(f->get_int("tokenizer.ggml.eos_token_id"), 2);
  EXPECT_EQ(f->find("tokenizer.ggml.bos_token_id")->type, ValueType::u32);
}

TEST(ggufVocab, AllVocabFilesParse) {
  fs::path dir = fs::path(GRAFT_TESTDATA_DIR) / "vocab";
  if (!fs::is_directory(dir)) GTEST_SKIP() << "no " << dir;
  int n = 0;
  for (const auto& e : fs::directory_iterator(dir)) {
    if (e.path().extension() != ".gguf") continue;
    auto f = File::open(e.path());
    ASSERT_TRUE(f.has_value()) << f.status().message();
    EXPECT_TRUE((*f)->get_string("tokenizer.ggml.model").has_value()) << e.path();
    EXPECT_TRUE((*f)->get_string_array("tokenizer.ggml.tokens").has_value()) << e.path();
    ++n;
  }
  if (n == 0) GTEST_SKIP() << "no .gguf files in " << dir;
}
