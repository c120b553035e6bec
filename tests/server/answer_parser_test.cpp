// AnswerParser: reasoning, answer text and tool calls apart, whatever the pieces' boundaries;
// ThinkingControl: budgets and an end of sequence inside thinking force the close, counted right.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/answer_parser.hpp"
#include "server/thinking_control.hpp"

using namespace graft;
using namespace graft::server;

namespace {

struct Split {
  std::string reasoning, content;
  std::vector<std::pair<std::string, std::string>> calls;
};

using Kind = ToolFormat::Kind;

// Feeds `text` in pieces of `piece` bytes (0: whole); tools: calls in the `kind` format are parsed.
Split parse(const std::string& text, bool in_reasoning, bool tools, std::size_t piece, Kind kind) {
  AnswerParser p(in_reasoning, tools ? std::optional(ToolFormat{kind}) : std::nullopt);
  std::vector<AnswerEvent> events;
  if (piece == 0) piece = text.size();
  for (std::size_t at = 0; at < text.size(); at += piece) p.push(std::string_view(text).substr(at, piece), events);
  p.finish(events);
  Split s;
  for (const AnswerEvent& e : events) {
    if (e.kind == AnswerEvent::Kind::reasoning) s.reasoning += e.text;
    if (e.kind == AnswerEvent::Kind::content) s.content += e.text;
    if (e.kind == AnswerEvent::Kind::tool_call) s.calls.emplace_back(e.name, e.arguments);
  }
  return s;
}

// Every piece size from 1 byte up gives the same split as the whole text.
void expect_split(const std::string& text, bool in_reasoning, bool tools, const Split& want, Kind kind = Kind::hermes) {
  for (std::size_t piece : {std::size_t(0), std::size_t(1), std::size_t(2), std::size_t(3), std::size_t(5), std::size_t(8)}) {
    const Split got = parse(text, in_reasoning, tools, piece, kind);
    EXPECT_EQ(got.reasoning, want.reasoning) << "pieces of " << piece << " bytes: " << text;
    EXPECT_EQ(got.content, want.content) << "pieces of " << piece << " bytes: " << text;
    EXPECT_EQ(got.calls, want.calls) << "pieces of " << piece << " bytes: " << text;
  }
}

}  // namespace

TEST(AnswerParser, TextWithoutTagsIsTheAnswerExactlyAsGenerated) {
  expect_split("  def f(x):\n    return x < y  \n", false, false, {"", "  def f(x):\n    return x < y  \n", {}});
  expect_split("a <b> <thin k> </tool_call> end\n", false, true, {"", "a <b> <thin k> </tool_call> end\n", {}});
}

TEST(AnswerParser, ThinkingIsReasoningWithoutItsFramingWhitespace) {
  expect_split("<think>\nLet me see.\nYes.\n</think>\n\nThe answer.", false, false,
               {"Let me see.\nYes.", "The answer.", {}});
  // A prompt that opened the block: the text starts inside it.
  expect_split("\nHmm. </think>\n\nOK", true, false, {"Hmm.", "OK", {}});
  // Never closed (max_tokens inside thinking): all of it is reasoning.
  expect_split("I am still thinking", true, false, {"I am still thinking", "", {}});
}

TEST(AnswerParser, ToolCallsAreParsedOnlyWhenToolsWereOffered) {
  const std::string text =
      "<think>\nweather\n</think>\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n"
      "</tool_call>\n<tool_call>\n{\"name\": \"now\"}\n</tool_call>";
  expect_split(text, false, true, {"weather", "", {{"get_weather", "{\"city\":\"Paris\"}"}, {"now", "{}"}}});
  expect_split(text, false, false,
               {"weather",
                "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n"
                "<tool_call>\n{\"name\": \"now\"}\n</tool_call>",
                {}});
}

TEST(AnswerParser, TextAroundToolCallsStaysAndBadCallsStayText) {
  expect_split("Let me look.\n<tool_call>{\"name\": \"f\", \"arguments\": \"{\\\"a\\\": 1}\"}</tool_call>", false, true,
               {"", "Let me look.", {{"f", "{\"a\": 1}"}}});
  // Not JSON, no name: the model's text as it was.
  expect_split("<tool_call>{oops}</tool_call>", false, true, {"", "<tool_call>{oops}</tool_call>", {}});
  // Never closed: the model's text as it was.
  expect_split("x <tool_call>{\"name\": \"f\"", false, true, {"", "x <tool_call>{\"name\": \"f\"", {}});
}

TEST(AnswerParser, MistralCallsAreTheArrayAfterToolCallsToTheEnd) {
  expect_split("[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"abc123def\"}, "
               "{\"name\": \"now\", \"arguments\": {}}]",
               false, true, {"", "", {{"get_weather", "{\"city\":\"Paris\"}"}, {"now", "{}"}}}, Kind::mistral);
  expect_split("Sure.\n[TOOL_CALLS][{\"name\": \"f\"}]\n", false, true, {"", "Sure.", {{"f", "{}"}}}, Kind::mistral);
  // Not calls: the text as it was (a Hermes tag means nothing to this format).
  expect_split("[TOOL_CALLS][oops]", false, true, {"", "[TOOL_CALLS][oops]", {}}, Kind::mistral);
  expect_split("<tool_call>{\"name\": \"f\"}</tool_call>", false, true, {"", "<tool_call>{\"name\": \"f\"}</tool_call>", {}},
               Kind::mistral);
}

TEST(AnswerParser, Llama3CallsAreABareObjectThatIsTheWholeAnswer) {
  expect_split("{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}", false, true,
               {"", "", {{"get_weather", "{\"city\":\"Paris\"}"}}}, Kind::llama3);
  expect_split("\n<|python_tag|>{\"name\": \"f\", \"arguments\": {\"a\": 1}}", false, true, {"", "", {{"f", "{\"a\":1}"}}},
               Kind::llama3);
  // After thinking, the answer's start still counts.
  expect_split("<think>hm</think>\n\n{\"name\": \"f\", \"parameters\": {}}", false, true, {"hm", "", {{"f", "{}"}}},
               Kind::llama3);
  // JSON that is no call, and an object later in the answer: answer text, exactly.
  expect_split("{\"result\": 42}", false, true, {"", "{\"result\": 42}", {}}, Kind::llama3);
  expect_split("The call is {\"name\": \"f\"}", false, true, {"", "The call is {\"name\": \"f\"}", {}}, Kind::llama3);
  expect_split("<|python_tag|>brave_search.call(query=\"x\")", false, true,
               {"", "<|python_tag|>brave_search.call(query=\"x\")", {}}, Kind::llama3);
}

TEST(ToolFormat, TheTemplateTellsTheFormatAndTheForcedStartOpensACall) {
  EXPECT_EQ(tool_format_of("{{- '[TOOL_CALLS][' }}").kind, Kind::mistral);
  EXPECT_EQ(tool_format_of("<tool_call>\n{{ tool_call | tojson }}").kind, Kind::hermes);
  EXPECT_EQ(tool_format_of("'Respond in the format {\"name\": function name, \"parameters\": dictionary of'").kind,
            Kind::llama3);
  EXPECT_EQ(tool_format_of("{{ messages }}").kind, Kind::hermes);
  EXPECT_EQ(ToolFormat{Kind::hermes}.forced_start(""), "<tool_call>\n{\"name\": \"");
  EXPECT_EQ(ToolFormat{Kind::hermes}.forced_start("get_weather"), "<tool_call>\n{\"name\": \"get_weather\", \"arguments\":");
  EXPECT_EQ(ToolFormat{Kind::mistral}.forced_start("f"), "[TOOL_CALLS][{\"name\": \"f\", \"arguments\":");
  EXPECT_EQ(ToolFormat{Kind::llama3}.forced_start("f"), "{\"name\": \"f\", \"parameters\":");
  // A forced start, completed by the model, parses as the call in each format.
  for (Kind k : {Kind::hermes, Kind::mistral, Kind::llama3}) {
    const ToolFormat f{k};
    std::string text = f.forced_start("f") + " {\"x\": 1}}";
    if (k == Kind::hermes) text += "\n</tool_call>";
    if (k == Kind::mistral) text += "]";
    expect_split(text, false, true, {"", "", {{"f", "{\"x\":1}"}}}, k);
  }
}

namespace {

// A vocabulary stand-in for ThinkingControl: ids 0..9 ordinary, 100 = <think>, 101 = </think>,
// 102 = "\n\n", 103 = end of sequence.
constexpr TokenId kOpen = 100, kClose = 101, kBlank = 102, kEos = 103;

ThinkingSettings settings(std::int64_t budget, bool answer_after_eos = true) {
  ThinkingSettings s;
  s.open = kOpen;
  s.close = kClose;
  s.close_text = {kClose, kBlank};
  s.budget = budget;
  s.answer_after_eos = answer_after_eos;
  return s;
}

// Runs the control over `sampled` (what the model would pick at each step, whatever came
// before), returning the emitted tokens up to an end of sequence.
std::vector<TokenId> run(ThinkingControl& c, const std::vector<TokenId>& sampled) {
  std::vector<TokenId> out;
  for (TokenId s : sampled) {
    const TokenId id = c.next(s, s == kEos);
    out.push_back(id);
    if (id == kEos) break;
  }
  return out;
}

}  // namespace

TEST(ThinkingControl, ABudgetOfNGivesAtMostNReasoningTokensThenTheClose) {
  for (std::int64_t budget : {0, 1, 2, 5}) {
    ThinkingControl c(settings(budget), false);
    const std::vector<TokenId> out = run(c, {kOpen, 1, 2, 3, 4, 5, 6, 7, 8, 9, 9, 9, 9, kEos});
    std::vector<TokenId> want = {kOpen};
    for (std::int64_t i = 0; i < std::min<std::int64_t>(budget, 8); ++i) want.push_back(1 + TokenId(i));
    want.push_back(kClose);
    want.push_back(kBlank);
    EXPECT_EQ(c.reasoning_tokens(), static_cast<std::uint32_t>(budget)) << budget;
    EXPECT_EQ(std::vector<TokenId>(out.begin(), out.begin() + std::ptrdiff_t(want.size())), want) << budget;
    EXPECT_EQ(c.forced(), ThinkingControl::Closed::budget);
    EXPECT_FALSE(c.in_thinking());
  }
}

TEST(ThinkingControl, AnEndOfSequenceInsideThinkingBecomesTheClose) {
  ThinkingControl c(settings(-1), true);  // the prompt opened the block
  // The close's second token takes the place of the next sampled one (3).
  EXPECT_EQ(run(c, {1, 2, kEos, 3, 4, kEos}), (std::vector<TokenId>{1, 2, kClose, kBlank, 4, kEos}));
  EXPECT_EQ(c.reasoning_tokens(), 2u);
  EXPECT_EQ(c.forced(), ThinkingControl::Closed::end_of_sequence);
  // Switched off, the end of sequence ends it.
  ThinkingControl off(settings(-1, false), true);
  EXPECT_EQ(run(off, {1, 2, kEos, 3}), (std::vector<TokenId>{1, 2, kEos}));
  EXPECT_EQ(off.forced(), ThinkingControl::Closed::no);
}

TEST(ThinkingControl, AModelThatClosesItselfIsLeftAlone) {
  ThinkingControl c(settings(3), false);
  EXPECT_EQ(run(c, {kOpen, 1, 2, kClose, kBlank, 5, 6, 7, 8, kEos}),
            (std::vector<TokenId>{kOpen, 1, 2, kClose, kBlank, 5, 6, 7, 8, kEos}));
  EXPECT_EQ(c.reasoning_tokens(), 2u);
  EXPECT_EQ(c.forced(), ThinkingControl::Closed::no);
}

TEST(ThinkingControl, AForcedAnswerStartComesAfterTheThinkingOrAtOnce) {
  constexpr TokenId kCall = 50, kName = 51;  // a tool call's forced opening
  ThinkingSettings s = settings(-1);
  s.answer_start = {kCall, kName};
  // No thinking: the answer's first two tokens are the forced ones; the model goes on after them.
  ThinkingControl now(s, false);
  EXPECT_EQ(now.unforced(), 0);
  EXPECT_EQ(run(now, {7, 8, 9, kEos}), (std::vector<TokenId>{kCall, kName, 9, kEos}));
  // The model thinks first: the start follows its own close, with the close's blank line.
  ThinkingControl after(s, false);
  EXPECT_EQ(run(after, {kOpen, 1, kClose, 7, 8, 9, kEos}), (std::vector<TokenId>{kOpen, 1, kClose, kBlank, kCall, kName, kEos}));
  // A budget's forced close brings it along.
  s.budget = 1;
  ThinkingControl budget(s, true);
  EXPECT_EQ(run(budget, {1, 2, 3, 4, 5, 6, kEos}), (std::vector<TokenId>{1, kClose, kBlank, kCall, kName, 6, kEos}));
  // A vocabulary without thinking tokens still gets the start.
  ThinkingSettings plain;
  plain.answer_start = {kCall};
  ThinkingControl none(plain, false);
  EXPECT_EQ(run(none, {kOpen, 2, kEos}), (std::vector<TokenId>{kCall, 2, kEos}));
  EXPECT_EQ(none.unforced(), -1);
}

TEST(ThinkingControl, OpensThinkingReadsThePromptsLastTag) {
  const ThinkingSettings s = settings(-1);
  EXPECT_TRUE(opens_thinking(std::vector<TokenId>{5, kOpen, 1}, s));
  EXPECT_FALSE(opens_thinking(std::vector<TokenId>{5, kOpen, 1, kClose, kBlank}, s));
  EXPECT_FALSE(opens_thinking(std::vector<TokenId>{5, 6}, s));
}
