#pragma once
// Internal error type of the interpreter. It never leaves the public API: ChatTemplate catches it
// and turns it into the one-line "chat template line L, column C: ..." message.
#include <string>
#include <utility>

namespace graft::chat {

struct SourcePos {
  int line = 0;  // 1-based; 0 = not known yet (filled in by the nearest enclosing AST node)
  int column = 0;
};

struct TemplateError {
  std::string message;
  SourcePos pos;
  // raise_exception() messages are reported as they are, so callers can match on them.
  bool raised = false;
};

[[noreturn]] inline void fail(std::string message) { throw TemplateError{std::move(message), {}, false}; }
[[noreturn]] inline void fail_at(SourcePos pos, std::string message) {
  throw TemplateError{std::move(message), pos, false};
}

}  // namespace graft::chat
