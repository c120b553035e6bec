// How a model writes its tool calls, read off its chat template (the template that tells the
// model about tools shows it the format): Hermes / Qwen `<tool_call>{json}</tool_call>`, Mistral
// `[TOOL_CALLS][{json}, ...]` to the end of the answer, Llama 3.x a bare `{"name": ..,
// "parameters": ..}` object as the whole answer (or after `<|python_tag|>`). Also the text a
// request's tool_choice (a call required, or one named function) forces the answer to start with.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace graft::server {

struct ToolCall {
  std::string name;
  std::string arguments;  // JSON text
};

struct ToolFormat {
  enum class Kind { hermes, mistral, llama3 };
  Kind kind = Kind::hermes;

  const char* name() const;
  // The text that opens a call (llama3: "{" at the answer's start, kept as part of the body) and
  // closes it ("": the call runs to the end of the answer).
  std::string_view open() const;
  std::string_view close() const;
  // The format's tags: vocabularies often hold them as control tokens, which text decoding leaves
  // out; a request with tools has them rendered (GenerationJob::shown_tokens).
  std::vector<std::string_view> markers() const;
  // Calls only at the answer's very start (llama3), or anywhere in it.
  bool at_start_only() const { return kind == Kind::llama3; }
  // The calls in a body (the text between open and close; llama3: with its "{"), in order; false
  // when it is not calls graft can read (the text then stays the answer's).
  bool parse(std::string_view body, std::vector<ToolCall>& calls) const;
  // What the answer is made to start with: a call to `function`, or to any function when empty
  // (ending before the arguments' own first token, the space included, which the model writes).
  std::string forced_start(std::string_view function) const;
};

// The format a chat template's text shows its model; Hermes when it shows none of them (graft's
// default template, and templates without tools).
ToolFormat tool_format_of(std::string_view chat_template);

}  // namespace graft::server
