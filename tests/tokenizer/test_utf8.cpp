// UTF-8 helpers, GPT-2's byte map and Utf8Stream, which must release whole characters only.
#include <gtest/gtest.h>

#include "tokenizer/byte_map.hpp"
#include "tokenizer/tokenizer.hpp"
#include "tokenizer/unicode.hpp"

namespace graft {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(tokUtf8Stream, HoldsAPartialCharacterUntilComplete) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\xC3"), "a");
  EXPECT_EQ(s.push("\xA9"), "\xC3\xA9");
  EXPECT_EQ(s.flush(), "");
}

TEST(tokUtf8Stream, FourByteCharacterInAnySplit) {
  const std::string emoji = "\xF0\x9F\x98\x81";
  for (std::size_t cut = 1; cut < 4; ++cut) {
    Utf8Stream s;
    EXPECT_EQ(s.push(emoji.substr(0, cut)), "") << cut;
    EXPECT_EQ(s.push(emoji.substr(cut)), emoji) << cut;
  }
  Utf8Stream s;  // one byte at a time
  std::string out;
  for (char c : emoji) out += s.push(std::string(1, c));
  EXPECT_EQ(out, emoji);
}

TEST(tokUtf8Stream, InvalidBytesBecomeReplacementCharacters) {
  Utf8Stream s;
  EXPECT_EQ(s.push("a\xFF" "b"), "a" + kFffd + "b");
  EXPECT_EQ(s.push("\xE2\x82" "A"), kFffd + "A");       // one U+FFFD for the broken sequence
  EXPECT_EQ(s.push("\xC0\x80"), kFffd + kFffd);        // overlong: both bytes invalid
  EXPECT_EQ(s.push("\xED\xA0\x80"), kFffd + kFffd + kFffd);  // surrogate
}

TEST(tokUtf8Stream, FlushReplacesAnUnfinishedTail) {
  Utf8Stream s;
  EXPECT_EQ(s.push("ok\xE2\x82"), "ok");
  EXPECT_EQ(s.flush(), kFffd);
  EXPECT_EQ(s.flush(), "");
  EXPECT_EQ(s.push("x"), "x");  // usable again
}

TEST(tokUnicode, ValidPrefixLength) {
  bool inc = false;
  EXPECT_EQ(unicode::valid_prefix_len("A"), 1u);
  EXPECT_EQ(unicode::valid_prefix_len("\xC3\xA9"), 2u);
  EXPECT_EQ(unicode::valid_prefix_len("\xE2\x96\x81"), 3u);
  EXPECT_EQ(unicode::valid_prefix_len("\xF4\x8F\xBF\xBF"), 4u);
  EXPECT_EQ(unicode::valid_prefix_len("\xF4\x90\x80\x80"), 0u);  // past U+10FFFF
  EXPECT_EQ(unicode::valid_prefix_len("\xF0\x9F", &inc), 0u);
  EXPECT_TRUE(inc);
  EXPECT_EQ(unicode::valid_prefix_len("\x80", &inc), 0u);
  EXPECT_FALSE(inc);
  EXPECT_TRUE(unicode::is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x81"));
  EXPECT_FALSE(unicode::is_valid_utf8("\xC3("));
}

TEST(tokUnicode, DecodeAndEncode) {
  const std::string s = "a\xC3\xA9\xF0\x9F\x98\x81\xFF";
  std::size_t pos = 0;
  EXPECT_EQ(unicode::decode_at(s, pos), U'a');
  EXPECT_EQ(unicode::decode_at(s, pos), U'\u00E9');
  EXPECT_EQ(unicode::decode_at(s, pos), U'\U0001F601');
  EXPECT_EQ(unicode::decode_at(s, pos), unicode::kReplacement);
  EXPECT_EQ(pos, s.size());
  EXPECT_EQ(unicode::to_utf8(U'\U0001F601'), "\xF0\x9F\x98\x81");
  EXPECT_EQ(unicode::to_utf8(0xD800), kFffd);
}

TEST(tokByteMap, Gpt2Spellings) {
  EXPECT_EQ(byte_map::byte_to_cp(' '), 0x120u);   // Ġ
  EXPECT_EQ(byte_map::byte_to_cp('\n'), 0x10Au);  // Ċ
  EXPECT_EQ(byte_map::byte_to_cp('A'), static_cast<char32_t>('A'));
  EXPECT_EQ(byte_map::byte_to_cp(0xAD), 0x143u);  // the last of the 68 remapped bytes
  EXPECT_EQ(byte_map::byte_to_cp(0xE9), 0xE9u);
  EXPECT_EQ(byte_map::cp_to_byte(0x120), ' ');
  EXPECT_EQ(byte_map::cp_to_byte(0x144), -1);
}

TEST(tokByteMap, EveryByteRoundTrips) {
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  const std::string spelled = byte_map::encode(all);
  EXPECT_TRUE(unicode::is_valid_utf8(spelled));
  std::size_t unmapped = 99;
  EXPECT_EQ(byte_map::decode(spelled, &unmapped), all);
  EXPECT_EQ(unmapped, 0u);
  byte_map::decode("\xE2\x96\x81", &unmapped);  // U+2581 is not a byte spelling
  EXPECT_EQ(unmapped, 1u);
}

}  // namespace
}  // namespace graft
