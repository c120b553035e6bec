// Byte-level BPE rules on hand-made vocabularies: merge order, ties, byte spelling, ignore_merges,
// missing characters, special tokens, BOS/EOS and decoding.
#include <gtest/gtest.h>

#include "synthetic_vocab.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/vocab_data.hpp"

namespace graft {
namespace {

using Ids = std::vector<TokenId>;

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

TEST(tokBpe, LowestRankMergesFirst) {
  // ids: 256 "ab", 257 "bc"
  auto ab_first = make(test::bpe_vocab({"ab", "bc"}, {"a b", "b c"}));
  EXPECT_EQ(encode(*ab_first, "abc"), (Ids{256, 'c'}));
  auto bc_first = make(test::bpe_vocab({"ab", "bc"}, {"b c", "a b"}));
  EXPECT_EQ(encode(*bc_first, "abc"), (Ids{'a', 257}));
}

TEST(tokBpe, EqualRanksMergeLeftmostFirst) {
  auto t = make(test::bpe_vocab({"aa"}, {"a a"}));
  EXPECT_EQ(encode(*t, "aaa"), (Ids{256, 'a'}));
  EXPECT_EQ(encode(*t, "aaaa"), (Ids{256, 256}));
}

TEST(tokBpe, MergesChainIntoLongerTokens) {
  // "aa aa" ranks after "a a": aaaa -> aa aa -> aaaa; a fifth a stays alone.
  auto t = make(test::bpe_vocab({"aa", "aaaa"}, {"a a", "aa aa"}));
  EXPECT_EQ(encode(*t, "aaaaa"), (Ids{257, 'a'}));
}

TEST(tokBpe, SpacesAreSpelledWithTheByteMap) {
  // " b" is spelled "Ġb"; the pre-tokenizer keeps the space with the word that follows.
  const std::string gb = "\xC4\xA0" "b";
  auto d = test::bpe_vocab({gb}, {"\xC4\xA0 b"});
  auto t = make(d);
  EXPECT_EQ(encode(*t, "a b"), (Ids{'a', test::bpe_id(d, gb)}));
  EXPECT_EQ(t->token_bytes(test::bpe_id(d, gb)), " b");
  EXPECT_EQ(t->token_bytes(' '), " ");  // id 32 is the spelling of byte 0x20, "Ġ"
}

TEST(tokBpe, MergesNeverCrossWords) {
  auto t = make(test::bpe_vocab({"a\xC4\xA0"}, {"a \xC4\xA0"}));  // "a " would need a merge across words
  EXPECT_EQ(encode(*t, "a b"), (Ids{'a', ' ', 'b'}));
}

TEST(tokBpe, IgnoreMergesTakesWholeWordTokens) {
  // "abc" is a token no merge reaches; llama3 (ignore_merges) uses it, gpt-2 does not.
  auto llama3 = make(test::bpe_vocab({"ab", "abc"}, {"a b"}, "llama3"));
  EXPECT_EQ(encode(*llama3, "abc"), (Ids{257}));
  auto gpt2 = make(test::bpe_vocab({"ab", "abc"}, {"a b"}, "gpt-2"));
  EXPECT_EQ(encode(*gpt2, "abc"), (Ids{256, 'c'}));
}

TEST(tokBpe, BytesWithoutATokenAreDropped) {
  // Like llama.cpp: the byte's spelling is looked up byte by byte, and nothing matches here.
  auto d = test::bpe_vocab({}, {"a b"});
  d.tokens['z'] = "[no z]";
  auto t = make(d);
  EXPECT_EQ(encode(*t, "azb"), (Ids{'a', 'b'}));
}

TEST(tokBpe, MultiByteCharactersSplitIntoByteTokens) {
  auto t = make(test::bpe_vocab({}, {"a b"}));
  const Ids ids = encode(*t, "\xC3\xA9");  // é: no merge, two byte tokens
  ASSERT_EQ(ids, (Ids{0xC3, 0xA9}));
  EXPECT_EQ(t->token_bytes(ids[0]) + t->token_bytes(ids[1]), "\xC3\xA9");
  EXPECT_EQ(t->decode(ids), "\xC3\xA9");
}

TEST(tokBpe, ControlTokensNeedParseSpecial) {
  auto d = test::bpe_vocab({"<|end|>"}, {"a b"});
  d.token_types.back() = static_cast<std::int32_t>(TokenType::control);
  auto t = make(d);
  EXPECT_EQ(encode(*t, "a<|end|>b", false, true), (Ids{'a', 256, 'b'}));
  const Ids plain = encode(*t, "a<|end|>b", false, false);
  EXPECT_EQ(plain.size(), 9u);  // a < | end | > b, all as text
  EXPECT_EQ(t->decode(plain), "a<|end|>b");
}

TEST(tokBpe, UserDefinedTokensAlwaysSplit) {
  auto d = test::bpe_vocab({"ab", "<tag>"}, {"a b"});
  d.token_types.back() = static_cast<std::int32_t>(TokenType::user_defined);
  auto t = make(d);
  // The token also keeps BPE from merging across it: "a" and "b" stay apart.
  EXPECT_EQ(encode(*t, "a<tag>b"), (Ids{'a', 257, 'b'}));
  EXPECT_EQ(encode(*t, "ab"), (Ids{256}));
  EXPECT_EQ(t->decode({257}), "<tag>");  // user-defined tokens render without render_special
}

TEST(tokBpe, LongestSpecialTokenWins) {
  auto d = test::bpe_vocab({"<x>", "<x>y"}, {"a b"});
  d.token_types[256] = d.token_types[257] = static_cast<std::int32_t>(TokenType::control);
  auto t = make(d);
  EXPECT_EQ(encode(*t, "<x>y<x>", false, true), (Ids{257, 256}));
}

TEST(tokBpe, AddSpecialFollowsTheVocabulary) {
  auto d = test::bpe_vocab({"<bos>", "<eos>"}, {"a b"});
  d.token_types[256] = d.token_types[257] = static_cast<std::int32_t>(TokenType::control);
  d.bos_id = 256;
  d.eos_id = 257;
  d.add_bos = true;
  d.add_eos = true;
  auto t = make(d);
  EXPECT_EQ(encode(*t, "a", true), (Ids{256, 'a', 257}));
  EXPECT_EQ(encode(*t, "a", false), (Ids{'a'}));
  EXPECT_EQ(encode(*t, "", true), (Ids{256, 257}));
  EXPECT_EQ(t->decode({256, 'a', 257}), "a");
  EXPECT_EQ(t->decode({256, 'a', 257}, true), "<bos>a<eos>");
}

TEST(tokBpe, Llama3AddsBosByDefault) {
  auto d = test::bpe_vocab({"<|begin_of_text|>"}, {"a b"}, "llama3");
  d.bos_id = 256;
  auto t = make(d);
  EXPECT_TRUE(t->add_bos());
  EXPECT_EQ(encode(*t, "a", true), (Ids{256, 'a'}));
  d = test::bpe_vocab({"<|begin_of_text|>"}, {"a b"}, "llama3");
  d.bos_id = 256;
  d.add_bos = false;  // the stored flag overrides the pre-type's default
  EXPECT_FALSE(make(d)->add_bos());
}

TEST(tokBpe, AddBosWithoutBosIdIsAnError) {
  auto d = test::bpe_vocab({}, {"a b"});
  d.add_bos = true;
  auto t = Tokenizer::create(d);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("add_bos_token"), std::string::npos);
}

TEST(tokBpe, UnknownPreIsAnErrorNotAFallback) {
  auto t = Tokenizer::create(test::bpe_vocab({}, {"a b"}, "mystery-llm"));
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().code(), Errc::unsupported);
  EXPECT_NE(t.status().message().find("unknown pre-tokenizer 'mystery-llm'"), std::string::npos);
  EXPECT_NE(t.status().message().find("qwen2"), std::string::npos);
}

TEST(tokBpe, MissingMergesIsAnError) {
  auto t = Tokenizer::create(test::bpe_vocab({}, {}));
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("tokenizer.ggml.merges"), std::string::npos);
}

TEST(tokBpe, UnknownModelIsAnError) {
  auto d = test::bpe_vocab({}, {"a b"});
  d.model = "bert";
  auto t = Tokenizer::create(d);
  ASSERT_FALSE(t);
  EXPECT_NE(t.status().message().find("unsupported tokenizer.ggml.model 'bert'"), std::string::npos);
}

TEST(tokBpe, EndOfGenerationTokens) {
  auto d = test::bpe_vocab({"<|im_end|>", "<|endoftext|>", "<eos>", "</s>", "<|im_start|>"}, {"a b"});
  d.token_types[256] = d.token_types[260] = static_cast<std::int32_t>(TokenType::control);
  d.eos_id = 258;
  auto t = make(d);
  EXPECT_TRUE(t->is_eog(256));   // <|im_end|> by text
  EXPECT_TRUE(t->is_eog(257));   // <|endoftext|> by text
  EXPECT_TRUE(t->is_eog(258));   // eos
  EXPECT_TRUE(t->is_eog(259));   // </s> by text
  EXPECT_FALSE(t->is_eog(260));  // <|im_start|>
  EXPECT_FALSE(t->is_eog('a'));
  EXPECT_EQ(t->eot(), 256);  // the first end-of-turn text, by id
  // A token found by its end-of-turn text counts as special even if typed normal.
  EXPECT_EQ(t->token_type(257), TokenType::control);
  EXPECT_TRUE(t->is_special(257));
  EXPECT_EQ(encode(*t, "<|endoftext|>", false, true), (Ids{257}));
}

TEST(tokBpe, StoredEotIdWins) {
  auto d = test::bpe_vocab({"<|im_end|>", "<|eot_id|>"}, {"a b"});
  d.eot_id = 257;
  auto t = make(d);
  EXPECT_EQ(t->eot(), 257);
  EXPECT_TRUE(t->is_eog(256));
  EXPECT_TRUE(t->is_eog(257));
}

TEST(tokBpe, OutOfRangeIdsAreHandled) {
  auto t = make(test::bpe_vocab({}, {"a b"}));
  EXPECT_EQ(t->token_bytes(-1), "");
  EXPECT_EQ(t->token_bytes(100000), "");
  EXPECT_EQ(t->token_text(100000), "");
  EXPECT_EQ(t->token_type(-5), TokenType::undefined);
  EXPECT_EQ(t->decode({'a', 999999, 'b'}), "ab");
  EXPECT_FALSE(t->is_eog(-1));
  EXPECT_EQ(t->bos(), -1);  // no default BOS for BPE vocabularies
}

TEST(tokBpe, InvalidUtf8InputRoundTrips) {
  auto t = make(test::bpe_vocab({"ab"}, {"a b"}));
  const std::string text = "ab\xFF\xC3(\x80 ab";
  EXPECT_EQ(t->decode(encode(*t, text)), text);
}

TEST(tokBpe, ReportsModelAndPre) {
  auto t = make(test::bpe_vocab({}, {"a b"}, ""));
  EXPECT_EQ(t->model(), "gpt2");
  EXPECT_EQ(t->pre(), "default");
  EXPECT_EQ(t->n_vocab(), 256u);
  EXPECT_EQ(t->find("a"), 'a');
  EXPECT_EQ(t->find("zz"), -1);
}

}  // namespace
}  // namespace graft
