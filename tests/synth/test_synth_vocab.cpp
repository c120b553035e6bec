// The synthetic byte-level BPE vocabulary: sizes, consistent merges, round trips.
#include <gtest/gtest.h>

#include <unordered_set>

#include "synth/synth_vocab.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::synth {
namespace {

void expect_consistent(const VocabData& d) {
  std::unordered_set<std::string> tokens(d.tokens.begin(), d.tokens.end());
  EXPECT_EQ(tokens.size(), d.tokens.size()) << "token texts are unique";
  for (const auto& m : d.merges) {
    const auto space = m.find(' ');
    ASSERT_NE(space, std::string::npos) << m;
    const std::string a = m.substr(0, space), b = m.substr(space + 1);
    ASSERT_TRUE(tokens.count(a) && tokens.count(b) && tokens.count(a + b)) << "merge '" << m << "'";
  }
}

TEST(SynthVocab, TinySizeIsLearnedFromTheBuiltinText) {
  auto d = build_vocab(512, "qwen2", false);
  ASSERT_TRUE(d) << d.status().message();
  ASSERT_EQ(d->tokens.size(), 512u);
  EXPECT_EQ(d->merges.size(), 512u - 259u) << "every merge adds a token at this size";
  EXPECT_EQ(d->tokens[509], "<|endoftext|>");
  EXPECT_EQ(d->tokens[510], "<|im_start|>");
  EXPECT_EQ(d->tokens[511], "<|im_end|>");
  EXPECT_EQ(d->token_types[511], static_cast<std::int32_t>(TokenType::control));
  EXPECT_EQ(d->eos_id, 509);
  expect_consistent(*d);

  auto tok = Tokenizer::create(*d);
  ASSERT_TRUE(tok) << tok.status().message();
  const std::string text = "def hello(world):\n    return 42\n";
  auto ids = (*tok)->encode(text, {});
  ASSERT_TRUE(ids) << ids.status().message();
  EXPECT_EQ((*tok)->decode(*ids), text);
  EXPECT_LT(ids->size(), text.size() * 2 / 3) << "merges learned from the built-in text apply";
  EXPECT_TRUE((*tok)->is_eog(511));
  EXPECT_FALSE((*tok)->add_bos());
}

TEST(SynthVocab, QwenSizedVocabularyIsFilledAndConsistent) {
  auto d = build_vocab(151936, "qwen2", false);
  ASSERT_TRUE(d) << d.status().message();
  ASSERT_EQ(d->tokens.size(), 151936u);
  expect_consistent(*d);
  auto tok = Tokenizer::create(*d);
  ASSERT_TRUE(tok) << tok.status().message();
  const std::string text = "The weather today is sunny; x = [1, 2, 3]  # ünïcode ✓\n\tend";
  auto ids = (*tok)->encode(text, {});
  ASSERT_TRUE(ids) << ids.status().message();
  EXPECT_EQ((*tok)->decode(*ids), text);
}

TEST(SynthVocab, LlamaBpeAndDeterminism) {
  auto a = build_vocab(1000, "llama-bpe", true), b = build_vocab(1000, "llama-bpe", true);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->tokens, b->tokens);
  EXPECT_EQ(a->merges, b->merges);
  expect_consistent(*a);
  auto tok = Tokenizer::create(*a);
  ASSERT_TRUE(tok) << tok.status().message();
  EXPECT_TRUE((*tok)->add_bos());
  auto ids = (*tok)->encode("hello", {.add_special = true, .parse_special = false});
  ASSERT_TRUE(ids);
  EXPECT_EQ(ids->front(), 997) << "<|endoftext|> doubles as BOS";
}

TEST(SynthVocab, SmallestSizeLoadsAndBelowIsAnError) {
  EXPECT_FALSE(build_vocab(259, "qwen2", false)) << "no merge: a gpt2 vocabulary would not load";
  auto d = build_vocab(260, "qwen2", false);
  ASSERT_TRUE(d) << d.status().message();
  EXPECT_EQ(d->merges.size(), 1u);
  auto tok = Tokenizer::create(*d);
  EXPECT_TRUE(tok) << tok.status().message();
}

}  // namespace
}  // namespace graft::synth
