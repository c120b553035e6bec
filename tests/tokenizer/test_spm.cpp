// SentencePiece (llama.cpp's SPM) on hand-made vocabularies: space escaping and the prefix,
// highest-score merging, byte fallback, special tokens and decoding.
#include <gtest/gtest.h>

#include "synthetic_vocab.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab_data.hpp"

namespace graft {
namespace {

using Ids = std::vector<TokenId>;
constexpr TokenId P = test::kSpmFirstPiece;  // id of the first piece given to spm_vocab
const std::string kSp = "\xE2\x96\x81";     // U+2581

std::unique_ptr<Tokenizer> make(VocabData d) {
  auto t = Tokenizer::create(std::move(d));
  EXPECT_TRUE(t) << t.status().message();
  return t ? std::move(*t) : nullptr;
}

Ids encode(const Tokenizer& t, std::string_view text, bool add_special = false, bool parse_special = false) {
  auto ids = t.encode(text, {add_special, parse_special});
  EXPECT_TRUE(ids) << ids.status().message();
  return ids ? *ids : Ids{};
}

TokenId byte_token(int b) { return 3 + b; }

TEST(tokSpm, HighestScoreMergesFirst) {
  auto d = test::spm_vocab({{"a", -1}, {"b", -1}, {"c", -1}, {"ab", -2}, {"bc", -1.5f}});
  d.add_space_prefix = false;
  EXPECT_EQ(encode(*make(d), "abc"), (Ids{P, P + 4}));  // a + bc
  d.scores[P + 3] = -1.0f;                               // now "ab" scores higher
  EXPECT_EQ(encode(*make(d), "abc"), (Ids{P + 3, P + 2}));
}

TEST(tokSpm, EqualScoresMergeLeftmostFirst) {
  auto d = test::spm_vocab({{"a", -1}, {"aa", -1}});
  d.add_space_prefix = false;
  EXPECT_EQ(encode(*make(d), "aaa"), (Ids{P + 1, P}));
}

TEST(tokSpm, PrefixesASpaceAndEscapesSpaces) {
  auto t = make(test::spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -0.5f}, {"b", -1}, {kSp + "b", -0.5f}}));
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(encode(*t, "a b"), (Ids{P + 2, P + 4}));
  EXPECT_EQ(encode(*t, "a b", true), (Ids{1, P + 2, P + 4}));
  EXPECT_EQ(encode(*t, " a"), (Ids{P, P + 2}));
  EXPECT_TRUE(encode(*t, "").empty());
  EXPECT_EQ(encode(*t, "", true), (Ids{1}));
}

TEST(tokSpm, NoPrefixWhenTheVocabularySaysSo) {
  auto d = test::spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -0.5f}});
  d.add_space_prefix = false;
  auto t = make(d);
  EXPECT_EQ(encode(*t, "a"), (Ids{P + 1}));
  EXPECT_EQ(t->decode({P + 2}), " a");  // and decoding keeps the space
}

TEST(tokSpm, ByteFallbackForUnknownCharacters) {
  auto t = make(test::spm_vocab({{kSp, -1}, {"a", -1}}));
  EXPECT_EQ(encode(*t, "a\xC3\xA9"), (Ids{P, P + 1, byte_token(0xC3), byte_token(0xA9)}));
  EXPECT_EQ(t->token_bytes(byte_token(0xC3)), "\xC3");
  EXPECT_EQ(t->decode(encode(*t, "a\xC3\xA9")), "a\xC3\xA9");
}

TEST(tokSpm, SpaceAfterSpecialTokens) {
  auto t = make(test::spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -0.5f}}));
  // parse_special: </s> is a token, and the text after it gets a new prefix space.
  EXPECT_EQ(encode(*t, "a</s>a", false, true), (Ids{P + 2, 2, P + 2}));
  // Without it, "</s>" is text: byte fallback for < / s >.
  const Ids plain = encode(*t, "</s>", false, false);
  EXPECT_EQ(plain.size(), 5u);
  EXPECT_EQ(t->decode(plain), "</s>");
}

TEST(tokSpm, DecodeStripsThePrefixSpaceOnce) {
  auto t = make(test::spm_vocab({{kSp, -1}, {"a", -1}, {kSp + "a", -0.5f}}));
  EXPECT_EQ(t->decode({P + 2, P + 2}), "a a");
  EXPECT_EQ(t->decode({1, P + 2}), "a");                  // BOS renders as nothing
  EXPECT_EQ(t->decode({1, P + 2}, true), "<s> a");        // as HF with special tokens kept
  EXPECT_EQ(t->decode(encode(*t, "  a  a ")), "  a  a ");  // round trip
  EXPECT_EQ(t->token_bytes(P + 2), " a");
  EXPECT_EQ(t->token_bytes(1), "<s>");
}

TEST(tokSpm, TokensAcrossSpacesStillMerge) {
  // A piece with U+2581 inside ("a▁b") disables word-by-word merging; the result must not change.
  auto t = make(test::spm_vocab({{kSp, -1}, {"a", -1}, {"b", -1}, {"a" + kSp, -0.8f}, {"a" + kSp + "b", -0.1f}}));
  EXPECT_EQ(encode(*t, "a b"), (Ids{P, P + 4}));  // ▁ + a▁b
}

TEST(tokSpm, DefaultsForSpecialIds) {
  auto t = make(test::spm_vocab({{"a", -1}}));
  EXPECT_EQ(t->bos(), 1);
  EXPECT_EQ(t->eos(), 2);
  EXPECT_EQ(t->unk(), 0);
  EXPECT_TRUE(t->is_eog(2));
  EXPECT_EQ(t->model(), "llama");
  EXPECT_EQ(t->token_type(0), TokenType::unknown);
  EXPECT_EQ(t->token_type(5), TokenType::byte);
}

TEST(tokSpm, ShortScoresAreAnError) {
  auto d = test::spm_vocab({{"a", -1}});
  d.scores.resize(10);
  auto t = Tokenizer::create(d);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("tokenizer.ggml.scores"), std::string::npos);
}

}  // namespace
}  // namespace graft
