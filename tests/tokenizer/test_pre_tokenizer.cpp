// Pre-tokenizer splitting, rule by rule, on strings that exercise each regex's corners:
// contractions, digit grouping, CJK, combining marks, newlines and trailing spaces. The expected
// pieces were computed independently with Python's `regex` module (Unicode semantics like
// HF tokenizers' Oniguruma) from the same pattern lists.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tokenizer/pre_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft {
namespace {

struct SplitCase {
  const char* pre;
  std::string text;
  std::vector<std::string> pieces;
};

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  auto pt = PreTokenizer::create(pre);
  EXPECT_TRUE(pt) << pt.status().message();
  if (!pt) return {};
  auto pieces = pt->split(text);
  EXPECT_TRUE(pieces) << pieces.status().message();
  if (!pieces) return {};
  return {pieces->begin(), pieces->end()};
}

const std::vector<SplitCase>& cases() {
  static const std::vector<SplitCase> c = {
    {"gpt-2", "I've don't WE'VE it's", {"I", "'ve", " don", "'t", " WE", "'", "VE", " it", "'s"}},
    {"gpt-2", "Hello  world   ", {"Hello", " ", " world", "   "}},
    {"gpt-2", "a\n\nb", {"a", "\n", "\n", "b"}},
    {"gpt-2", " 12345 3.14", {" 12345", " 3", ".", "14"}},
    {"gpt-2", "\u65E5\u672C\u8A9E \u30C6\u30AD\u30B9\u30C8", {"\u65E5\u672C\u8A9E", " \u30C6\u30AD\u30B9\u30C8"}},
    {"gpt-2", "foo(bar)->baz;", {"foo", "(", "bar", ")->", "baz", ";"}},
    {"llama3", "I've WE'VE it'S", {"I", "'ve", " WE", "'VE", " it", "'S"}},
    {"llama3", "1234567 89", {"123", "456", "7", " ", "89"}},
    {"llama3", "Hello  world   ", {"Hello", " ", " world", "   "}},
    {"llama3", "a\n\n  b", {"a", "\n\n", " ", " b"}},
    {"llama3", "\u65E5\u672C\u8A9E \u30C6\u30AD\u30B9\u30C8", {"\u65E5\u672C\u8A9E", " \u30C6\u30AD\u30B9\u30C8"}},
    {"llama3", "  x\r\n\ty", {" ", " x", "\r\n", "\ty"}},
    {"llama3", "$12,345.67", {"$", "12", ",", "345", ".", "67"}},
    {"qwen2", "I've WE'VE", {"I", "'ve", " WE", "'VE"}},
    {"qwen2", "12345", {"1", "2", "3", "4", "5"}},
    {"qwen2", "Hello\n\n  world  ", {"Hello", "\n\n", " ", " world", "  "}},
    {"qwen2", "\u4E2D\u6587\uFF0C\u6D4B\u8BD5\u3002", {"\u4E2D\u6587", "\uFF0C\u6D4B\u8BD5", "\u3002"}},
    {"qwen2", "a!!  b", {"a", "!!", " ", " b"}},
    {"qwen35", "e\u0301te\u0301 caf\u00E9", {"e\u0301te\u0301", " caf\u00E9"}},
    {"qwen35", "\u0928\u092E\u0938\u094D\u0924\u0947 \u0926\u0941\u0928\u093F\u092F\u093E", {"\u0928\u092E\u0938\u094D\u0924\u0947", " \u0926\u0941\u0928\u093F\u092F\u093E"}},
    {"qwen35", "12 ab", {"1", "2", " ab"}},
    {"qwen35", "x\u0301!\u0301", {"x\u0301", "!\u0301"}},
    {"deepseek-coder", "Hello, world!\n  x = 42", {"Hello", ",", " world", "!", "\n", " ", " x", " = ", "4", "2"}},
    {"deepseek-coder", "\u4E2D\u6587\u6D4B\u8BD5abc123", {"\u4E2D\u6587\u6D4B\u8BD5", "abc", "1", "2", "3"}},
    {"deepseek-coder", "a\r\nb", {"a", "\r", "\n", "b"}},
    {"deepseek-coder", " ( foo )", {" (", " foo", " )"}},
    {"deepseek-llm", "Hello, world!  ", {"Hello", ",", " world", "!", "  "}},
    {"deepseek-llm", "\u0391\u0392\u0393 \u03A9mega", {"\u0391\u0392\u0393", " \u03A9", "mega"}},
    {"deepseek-llm", "\u4E2D\u6587\u6D4B\u8BD5abc123", {"\u4E2D\u6587\u6D4B\u8BD5", "abc", "123"}},
    {"deepseek-llm", "x\uFF08\u5168\u89D2\uFF09", {"x", "\uFF08", "\u5168\u89D2", "\uFF09"}},
    {"deepseek-v3", "Hello, world!", {"Hello", ",", " world", "!"}},
    {"deepseek-v3", "1234567", {"123", "456", "7"}},
    {"deepseek-v3", "\u65E5\u672C\u8A9E\u306E\u30C6\u30AD\u30B9\u30C8", {"\u65E5\u672C\u8A9E\u306E\u30C6\u30AD\u30B9\u30C8"}},
    {"deepseek-v3", ".Net x++", {".Net", " x", "++"}},
    {"falcon", "Hello, world! 1234567", {"Hello", ",", " world", "!", " ", "123", "456", "7"}},
    {"falcon", "a...b", {"a", "...", "b"}},
    {"starcoder", "x = 12345;", {"x", " =", " ", "1", "2", "3", "4", "5", ";"}},
    {"starcoder", "Hello  world", {"Hello", " ", " world"}},
    {"gpt-4o", "HelloWorld XMLHttp iPhone", {"Hello", "World", " XMLHttp", " i", "Phone"}},
    {"gpt-4o", "I'VE it's", {"I'VE", " it's"}},
    {"gpt-4o", "1234567", {"123", "456", "7"}},
    {"gpt-4o", "a/b\n//c", {"a", "/b", "\n", "//", "c"}},
    {"tekken", "HelloWorld XMLHttp", {"Hello", "World", " XMLHttp"}},
    {"tekken", "1234", {"1", "2", "3", "4"}},
    {"tekken", "a/b//\n", {"a", "/b", "//\n"}},
    {"bloom", "Hello, world! (x)", {"Hello", ",", " world", "! (", "x", ")"}},
    {"bloom", "a.b?c", {"a", ".", "b", "?", "c"}},
    {"superbpe", "1234567 89", {"1", "234", "567", " ", "89"}},
    {"tiny_aya", "1234567 12345", {"1", "234", "567", " ", "12", "345"}},
    {"bailingmoe", "it's DON'T", {"it", "'s", " DON", "'T"}},
    {"bailingmoe", "a\n\nb", {"a", "\n\n", "b"}},
    {"exaone-moe", "New York City ab", {"New York City ab"}},
    {"exaone-moe", "e\u0301 x", {"e\u0301 x"}},
    {"jais-2", "a         b", {"a", "        ", " b"}},
    {"chameleon", "<sentinel:12>IMGIMGABZ  x", {"<", "sentinel", ":", "1", "2", ">", "IMGIMGABZ", "  ", "x"}},
    {"minicpm5", "12345 ab", {"123", "45", " ab"}},
  };
  return c;
}

TEST(tokPreTokenizer, SplitsLikeTheReferenceRegexes) {
  for (const auto& c : cases()) {
    EXPECT_EQ(split(c.pre, c.text), c.pieces) << c.pre << " on '" << c.text << "'";
  }
}

TEST(tokPreTokenizer, PiecesConcatenateToTheInput) {
  const std::string text = "Hi  there!\n\n\t1234567 caf\u00E9 \u65E5\u672C\u8A9E \U0001F600  \xFF\xFE bad utf8 ";
  for (const auto name : PreTokenizer::supported_names()) {
    std::string joined;
    for (const auto& p : split(name, text)) {
      EXPECT_FALSE(p.empty()) << name;
      joined += p;
    }
    EXPECT_EQ(joined, text) << name;
  }
}

TEST(tokPreTokenizer, EmptyInputGivesNoPieces) { EXPECT_TRUE(split("qwen2", "").empty()); }

TEST(tokPreTokenizer, AbsentNameIsTheDefault) {
  auto pt = PreTokenizer::create("");
  ASSERT_TRUE(pt);
  EXPECT_EQ(pt->name(), "default");
  EXPECT_EQ(split("", "I've 123"), (std::vector<std::string>{"I", "'ve", " 123"}));
}

TEST(tokPreTokenizer, AliasesShareTheirRule) {
  EXPECT_EQ(split("llama-bpe", "1234567"), (std::vector<std::string>{"123", "456", "7"}));
  EXPECT_EQ(split("stablelm2", "123"), (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(split("refact", "x 12"), (std::vector<std::string>{"x", " ", "1", "2"}));
}

TEST(tokPreTokenizer, Llama3IgnoresMergesAndAddsBos) {
  auto pt = PreTokenizer::create("llama3");
  ASSERT_TRUE(pt);
  EXPECT_TRUE(pt->rule().ignore_merges);
  EXPECT_TRUE(pt->rule().add_bos);
  auto qwen = PreTokenizer::create("qwen2");
  ASSERT_TRUE(qwen);
  EXPECT_FALSE(qwen->rule().ignore_merges);
}

// U+180E is a format character in Unicode; PCRE2's plain \s would call it space.
TEST(tokPreTokenizer, MongolianVowelSeparatorIsNotSpace) {
  EXPECT_EQ(split("gpt-2", "a\u180E b"), (std::vector<std::string>{"a", "\u180E", " b"}));
}

TEST(tokPreTokenizer, InvalidUtf8StaysBetweenMatches) {
  // The lone lead byte matches nothing and becomes a piece of its own; "(" is still a match.
  EXPECT_EQ(split("gpt-2", "ab\xC3(cd"), (std::vector<std::string>{"ab", "\xC3", "(", "cd"}));
}

TEST(tokPreTokenizer, UnknownNameIsAnErrorListingSupportedOnes) {
  auto pt = PreTokenizer::create("no-such-pre");
  ASSERT_FALSE(pt);
  const std::string& msg = pt.status().message();
  EXPECT_EQ(pt.status().code(), Errc::unsupported);
  EXPECT_NE(msg.find("unknown pre-tokenizer 'no-such-pre'"), std::string::npos) << msg;
  const std::size_t list_at = msg.find("supported: ");
  ASSERT_NE(list_at, std::string::npos) << msg;
  std::vector<std::string> listed;
  std::string rest = msg.substr(list_at + 11);
  for (std::size_t pos = 0;;) {
    const std::size_t comma = rest.find(", ", pos);
    listed.push_back(rest.substr(pos, comma - pos));
    if (comma == std::string::npos) break;
    pos = comma + 2;
  }
  for (const char* name : {"default", "gpt-2", "qwen2", "qwen35", "llama3", "llama-bpe", "deepseek-llm",
                           "deepseek-coder", "deepseek-v3", "falcon", "mpt", "starcoder", "refact", "gpt-neox",
                           "command-r", "olmo", "stablelm2", "smollm", "jais", "tekken", "smaug-bpe", "gpt-4o"}) {
    EXPECT_NE(std::find(listed.begin(), listed.end(), name), listed.end()) << name << " missing from: " << msg;
  }
  EXPECT_EQ(msg.find('\n'), std::string::npos);
}

TEST(tokPreTokenizer, EveryRuleCompiles) {
  const auto names = PreTokenizer::supported_names();
  EXPECT_GE(names.size(), 60u);
  for (const auto name : names) EXPECT_TRUE(PreTokenizer::create(name)) << name;
  // Names are unique, or the first rule would shadow a later one.
  std::vector<std::string_view> sorted(names.begin(), names.end());
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::adjacent_find(sorted.begin(), sorted.end()), sorted.end());
}

}  // namespace
}  // namespace graft
