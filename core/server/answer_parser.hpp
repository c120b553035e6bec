// A chat answer's text, as it streams, split into what the APIs return apart: reasoning (inside
// <think> ... </think>), the answer's text, and tool calls in the model's format (tool_format.hpp:
// Hermes/Qwen <tool_call>{json}</tool_call>, Mistral [TOOL_CALLS][...], Llama 3 bare JSON). Tags
// may arrive split across pieces:
// a possible tag start is held back until it is decided. Whitespace that only frames a block
// (after <think>, before </think>, after </think>, around tool calls) is dropped; the answer of a
// model that writes no tags comes out exactly as generated.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_format.hpp"

namespace graft::server {

struct AnswerEvent {
  enum class Kind { reasoning, content, tool_call };
  Kind kind = Kind::content;
  std::string text;       // reasoning / content
  std::string name;       // tool_call: the function's name
  std::string arguments;  // tool_call: its arguments as JSON text
  // Set by the job as the event is made (the server's own figures for a stream's live speed):
  // the tokens generated so far, and the seconds since the first of them.
  std::uint32_t tokens = 0;
  double seconds = 0;
};

class AnswerParser {
 public:
  // in_reasoning: the prompt left a thinking block open. tools: the model's call format when the
  // request offered tools (calls are parsed only then; otherwise their text is answer text).
  AnswerParser(bool in_reasoning, std::optional<ToolFormat> tools);
  void push(std::string_view text, std::vector<AnswerEvent>& out);
  // The end of generation: releases what was held back (an unclosed tool call as answer text).
  void finish(std::vector<AnswerEvent>& out);

 private:
  enum class State { content, reasoning, tool };
  void emit(AnswerEvent::Kind kind, std::string text, std::vector<AnswerEvent>& out);
  void tool_call(const std::string& body, std::vector<AnswerEvent>& out);
  State state_;
  std::optional<ToolFormat> tools_;
  bool answered_ = false;    // answer text released (a llama3 call can no longer start)
  bool block_start_ = true;  // nothing of this block released yet: leading framing whitespace drops
  bool after_tag_ = false;   // this content block follows a </think> or a tool call
  std::string buf_;          // received, not yet released
  std::string tool_;         // the open tool call's body so far
  std::string before_tool_;  // the whitespace dropped before it (back if it is no call)
};

}  // namespace graft::server
