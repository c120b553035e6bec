// Ends generation at a stop string or an end-of-generation token. Works on the detokenized
// bytes, so a stop string may span several tokens: text that could be the start of a stop string
// is held back until the next token decides it, and the stop string itself is never emitted.
// Feed the released text to a Utf8Stream afterwards when printing token by token.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace graft {

enum class StopReason { none, stop_string, eog };

struct StopResult {
  std::string text;                    // safe to emit now (never contains a stop string)
  StopReason reason = StopReason::none;
  std::string matched;                 // the stop string found (reason == stop_string)
  bool stopped() const { return reason != StopReason::none; }
};

class StopChecker {
 public:
  // Empty stop strings are ignored.
  explicit StopChecker(std::vector<std::string> stop_strings = {});

  // The next bytes of output. On a match, `text` is everything before the earliest match and the
  // rest is discarded; otherwise it is everything except the longest tail that begins a stop
  // string.
  StopResult push_text(std::string_view bytes);

  // The next token: an end-of-generation token (tok.is_eog) stops and releases the held text;
  // any other token is pushed as its detokenized bytes (special tokens render as nothing unless
  // render_special).
  StopResult push_token(const Tokenizer& tok, TokenId id, bool render_special = false);

  // Generation ended for another reason (token limit): releases the held text.
  std::string flush();

  bool stopped() const { return reason_ != StopReason::none; }
  const std::string& held() const { return pending_; }

 private:
  std::vector<std::string> stops_;
  std::string pending_;
  StopReason reason_ = StopReason::none;
};

}  // namespace graft
