// Parity with HuggingFace tokenizers on the real vocabularies: each .inp string must tokenize to
// the ids on the same line of the .out file (no BOS, special-token parsing off), and decode back.
#include <gtest/gtest.h>

#include "gguf/gguf_file.hpp"
#include "tokenizer/tokenizer.hpp"
#include "vocab_files.hpp"

namespace graft {
namespace {

std::string show(const std::vector<TokenId>& ids) {
  std::string s;
  for (auto id : ids) s += " " + std::to_string(id);
  return s;
}

class VocabParity : public ::testing::TestWithParam<const char*> {};

TEST_P(VocabParity, MatchesReferenceIds) {
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

TEST_P(VocabParity, DecodeRoundTrips) {
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

INSTANTIATE_TEST_SUITE_P(Vocab, VocabParity,
                         ::testing::Values("gpt-2", "starcoder", "deepseek-coder", "llama-spm"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
}  // namespace graft
