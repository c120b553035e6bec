// The text side of one sequence's generation: each token's bytes through the stop strings, then
// released as whole UTF-8 characters, so text streamed token by token never contains a stop
// string nor splits a character.
#pragma once

#include <string>
#include <vector>

#include "sampling/stop_checker.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft {

class TextStream {
 public:
  // shown: special tokens rendered as text all the same (a chat answer's tool-call and thinking
  // tags, which vocabularies often hold as control tokens); others are left out.
  TextStream(const Tokenizer& tok, std::vector<std::string> stop_strings, std::vector<TokenId> shown = {});

  struct Piece {
    std::string text;      // what this token adds to the output (may be empty while held back)
    bool stopped = false;  // a stop string matched (its text and what follows are never output)
  };
  Piece push(TokenId id);
  // Generation ended: the text still held back (a possible stop-string start, an unfinished
  // character as U+FFFD).
  std::string finish();

  const std::string& text() const { return text_; }  // everything released so far
  bool stopped() const { return stop_.stopped(); }

 private:
  const Tokenizer& tok_;
  StopChecker stop_;
  Utf8Stream utf8_;
  std::string text_;
  std::vector<TokenId> shown_;
};

}  // namespace graft
