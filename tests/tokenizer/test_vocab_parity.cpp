// Parity with HuggingFace tokenizers on the real vocabularies: each .inp string must tokenize to
// the ids on the same line of the .out file (no BOS, special-token parsing off), and decode back.
#include <gtest/gtest.h>

#include "gguf/gguf_file.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"
#include "vocab_files.hpp"

namespace graft {
namespace {

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (auto id : ids) {
    s += ' ';
    s += std::to_string(id);
  }
  return s;
}

class tokVocabParity : public ::testing::TestWithParam<const char*> {};

TEST_P(tokVocabParity, MatchesReferenceIds) {
  const auto base = test::vocab_dir() / (std::string("ggml-vocab-") + GetParam() + ".gguf");
  if (!std::filesystem::exists(base)) GTEST_SKIP() << base << " absent";
  auto file = gguf::File::open(base);
  ASSERT_TRUE(file) << file.status().message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok) << tok.status().message();

  const auto inputs = test::read_inputs(base.string() + ".inp");
  const auto expected = test::read_outputs(base.string() + ".out");
  ASSERT_EQ(inputs.size(), expected.size());
  ASSERT_GT(inputs.size(), 40u);

  std::size_t matched = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    auto ids = (*tok)->encode(inputs[i], {});
    ASSERT_TRUE(ids) << ids.status().message();
    if (*ids == expected[i]) {
      ++matched;
    } else {
      ADD_FAILURE() << GetParam() << " string " << i << " '" << inputs[i] << "'\n  got:     " << show(*ids)
                    << "\n  expected:" << show(expected[i]);
    }
  }
  std::printf("[ parity ] %s: %zu/%zu strings match\n", GetParam(), matched, inputs.size());
  EXPECT_EQ(matched, inputs.size());
}

TEST_P(tokVocabParity, DecodeRoundTrips) {
  const auto base = test::vocab_dir() / (std::string("ggml-vocab-") + GetParam() + ".gguf");
  if (!std::filesystem::exists(base)) GTEST_SKIP() << base << " absent";
  auto file = gguf::File::open(base);
  ASSERT_TRUE(file) << file.status().message();
  auto tok = Tokenizer::from_gguf(**file);
  ASSERT_TRUE(tok) << tok.status().message();
  for (const auto& s : test::read_inputs(base.string() + ".inp")) {
    auto ids = (*tok)->encode(s, {});
    ASSERT_TRUE(ids);
    // Byte-level BPE is lossless; SentencePiece is too, once the prefix space is stripped.
    EXPECT_EQ((*tok)->decode(*ids), s) << GetParam();
  }
}

INSTANTIATE_TEST_SUITE_P(tokVocab, tokVocabParity,
                         ::testing::Values("gpt-2", "starcoder", "deepseek-coder", "llama-spm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace graft

namespace graft {
namespace {

std::unique_ptr<Tokenizer> load(const char* name) {
  const auto path = test::vocab_dir() / (std::string("ggml-vocab-") + name + ".gguf");
  if (!std::filesystem::exists(path)) return nullptr;
  auto file = gguf::File::open(path);
  if (!file) return nullptr;
  auto tok = Tokenizer::from_gguf(**file);
  return tok ? std::move(*tok) : nullptr;
}

// Streaming output token by token: a character split across tokens comes out once, whole.
TEST(tokRealVocab, StreamingReassemblesCharactersSplitAcrossTokens) {
  auto tok = load("gpt-2");
  if (!tok) GTEST_SKIP() << "ggml-vocab-gpt-2.gguf absent";
  const std::string text = "emoji \xF0\x9F\x98\x81 and \xE1\x9E\x80\xE1\x9E\xB6 done";
  auto ids = tok->encode(text, {});
  ASSERT_TRUE(ids);
  Utf8Stream stream;
  std::string out;
  bool saw_partial = false;
  for (const TokenId id : *ids) {
    const std::string bytes = tok->token_bytes(id);
    saw_partial |= !unicode::is_valid_utf8(bytes);
    const std::string released = stream.push(bytes);
    EXPECT_TRUE(unicode::is_valid_utf8(released)) << id;
    out += released;
  }
  out += stream.flush();
  EXPECT_TRUE(saw_partial);  // the emoji's bytes are spread over tokens in GPT-2's vocabulary
  EXPECT_EQ(out, text);
}

TEST(tokRealVocab, SpecialTokensOfTheVocabularies) {
  auto gpt2 = load("gpt-2");
  auto spm = load("llama-spm");
  auto dsc = load("deepseek-coder");
  auto sc = load("starcoder");
  if (!gpt2 || !spm || !dsc || !sc) GTEST_SKIP() << "vocabularies absent";

  EXPECT_EQ(gpt2->eos(), 50256);
  EXPECT_TRUE(gpt2->is_eog(50256));
  EXPECT_FALSE(gpt2->add_bos());
  EXPECT_EQ(gpt2->pre(), "gpt-2");

  EXPECT_EQ(spm->bos(), 1);
  EXPECT_TRUE(spm->add_bos());
  EXPECT_EQ(*spm->encode("Hello", {true, false}), (std::vector<TokenId>{1, 15043}));
  EXPECT_EQ(*spm->encode("<s>Hello", {false, true}), (std::vector<TokenId>{1, 15043}));
  EXPECT_EQ(spm->decode({1, 15043, 2}), "Hello");
  EXPECT_EQ(spm->decode({1, 15043, 2}, true), "<s> Hello</s>");

  // deepseek-coder: user-defined tokens split the text even without parse_special.
  EXPECT_EQ(dsc->token_type(32009), TokenType::user_defined);
  EXPECT_EQ(*dsc->encode("F\xC3\xBChrer", {}), (std::vector<TokenId>{37, 32009, 71, 6247}));
  EXPECT_EQ(*dsc->encode("x", {true, false}), (std::vector<TokenId>{32013, 87}));
  EXPECT_TRUE(dsc->is_eog(32014));
  EXPECT_EQ(dsc->pad(), 32014);  // tokenizer.ggml.padding_token_id
  EXPECT_EQ(dsc->eom(), -1);

  // starcoder: <fim_pad> is end-of-generation (llama.cpp's FIM pad rule), <fim_prefix> is not.
  EXPECT_TRUE(sc->is_eog(0));
  EXPECT_TRUE(sc->is_eog(4));
  EXPECT_FALSE(sc->is_eog(1));
  EXPECT_EQ(*sc->encode("<fim_prefix>x", {false, true}), (std::vector<TokenId>{1, sc->find("x")}));
}

}  // namespace
}  // namespace graft
