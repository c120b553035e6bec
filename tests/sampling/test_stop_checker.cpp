// Stop strings over streamed text (spanning tokens, held-back partial matches) and EOG tokens.
#include <gtest/gtest.h>

#include <string>

#include "sampling/stop_checker.hpp"
#include "tokenizer/synthetic_vocab.hpp"

namespace graft {
namespace {

TEST(StopChecker, NoStopStringsPassesEverything) {
  StopChecker stop;
  auto r = stop.push_text("hello <");
  EXPECT_EQ(r.text, "hello <");
  EXPECT_FALSE(r.stopped());
}

TEST(StopChecker, StopInsideOneChunk) {
  StopChecker stop({"END"});
  EXPECT_EQ(stop.push_text("Hello").text, "Hello");
  auto r = stop.push_text(" END and more");
  EXPECT_EQ(r.text, " ");
  EXPECT_EQ(r.reason, StopReason::stop_string);
  EXPECT_EQ(r.matched, "END");
  EXPECT_TRUE(stop.stopped());
  EXPECT_EQ(stop.push_text("later").text, "") << "nothing after a stop";
}

TEST(StopChecker, StopSpanningTokensIsHeldBackThenDropped) {
  StopChecker stop({"</s>"});
  auto r = stop.push_text("abc<");
  EXPECT_EQ(r.text, "abc");
  EXPECT_EQ(stop.held(), "<");
  r = stop.push_text("/");
  EXPECT_EQ(r.text, "");
  EXPECT_EQ(stop.held(), "</");
  r = stop.push_text("s> tail");
  EXPECT_EQ(r.text, "");
  EXPECT_TRUE(r.stopped());
  EXPECT_EQ(r.matched, "</s>");
}

TEST(StopChecker, PartialMatchThatFailsIsReleased) {
  StopChecker stop({"</s>"});
  EXPECT_EQ(stop.push_text("a<").text, "a");
  auto r = stop.push_text("b");
  EXPECT_EQ(r.text, "<b");
  EXPECT_FALSE(r.stopped());
  EXPECT_EQ(stop.push_text("<").text, "");
  EXPECT_EQ(stop.flush(), "<") << "end of generation releases the held text";
}

TEST(StopChecker, OverlappingPrefixes) {
  StopChecker stop({"aab"});
  std::string out = stop.push_text("aa").text;
  out += stop.push_text("a").text;
  auto r = stop.push_text("b");
  out += r.text;
  EXPECT_TRUE(r.stopped());
  EXPECT_EQ(out, "a") << "'aaab' without its stop string";
}

TEST(StopChecker, EarliestOfSeveralStopStringsWins) {
  StopChecker stop({"world", "lo w", ""});
  auto r = stop.push_text("hello world");
  EXPECT_EQ(r.text, "hel");
  EXPECT_EQ(r.matched, "lo w");
}

TEST(StopChecker, EogTokenStopsAndReleasesHeldText) {
  auto data = test::bpe_vocab({"ab", "<|im_end|>"}, {"a b"}, "gpt-2");
  data.token_types.back() = static_cast<std::int32_t>(TokenType::control);
  auto tok = Tokenizer::create(data);
  ASSERT_TRUE(tok) << tok.status().message();
  const TokenId im_end = 257;
  ASSERT_TRUE((*tok)->is_eog(im_end));

  StopChecker stop({"xyz"});
  EXPECT_EQ(stop.push_token(**tok, 'h').text, "h");
  EXPECT_EQ(stop.push_token(**tok, 'x').text, "");
  auto r = stop.push_token(**tok, im_end);
  EXPECT_EQ(r.reason, StopReason::eog);
  EXPECT_EQ(r.text, "x");
}

TEST(StopChecker, StopStringAcrossTokens) {
  auto tok = Tokenizer::create(test::bpe_vocab({"ab"}, {"a b"}, "gpt-2"));
  ASSERT_TRUE(tok) << tok.status().message();
  StopChecker stop({"\n\n"});
  std::string out;
  StopResult r;
  for (const char c : std::string("one\ntwo\n\nthree")) {
    r = stop.push_token(**tok, static_cast<unsigned char>(c));
    out += r.text;
    if (r.stopped()) break;
  }
  EXPECT_TRUE(r.stopped());
  EXPECT_EQ(out, "one\ntwo");
}

}  // namespace
}  // namespace graft
