// Thinking as the request wants it, token by token: counts the reasoning tokens a sequence emits
// inside <think> ... </think>, and when the budget is spent, or the model ends its sequence while
// still thinking ("stops inside its thinking and never answers"), replaces the sampled token with
// a forced close ("</think>\n\n") so the answer follows. A request's tool_choice (a call
// required, or one function named) makes the answer start with the call's opening, forced the
// same way once the thinking is over. The text side (reasoning_content apart from content, the
// calls) is AnswerParser's.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <span>
#include <vector>

#include "tokenizer/tokenizer.hpp"

namespace graft::server {

struct ThinkingSettings {
  TokenId open = -1, close = -1;  // the vocabulary's <think> and </think> (-1: none; no control)
  std::vector<TokenId> close_text;  // what a forced close emits, starting with `close`
  std::int64_t budget = -1;         // reasoning tokens allowed; -1: no limit
  bool answer_after_eos = true;     // an end of sequence inside thinking forces the close
  std::vector<TokenId> answer_start;  // forced at the start of the answer (tool_choice); empty: none
};

// The vocabulary's <think> / </think> and "</think>\n\n" as tokens; open == -1 when it has none.
ThinkingSettings thinking_tokens(const Tokenizer& tok);

// Whether `prompt` leaves a thinking block open (its last <think> after its last </think>): the
// templates that start the answer with "<think>\n" for the model.
bool opens_thinking(std::span<const TokenId> prompt, const ThinkingSettings& s);

class ThinkingControl {
 public:
  ThinkingControl(ThinkingSettings s, bool in_thinking) : s_(std::move(s)), in_thinking_(in_thinking) {}

  enum class Closed { no, budget, end_of_sequence };
  // The token to emit for the `sampled` one (`eog`: it ends the sequence): itself, or the next
  // token of a forced close.
  TokenId next(TokenId sampled, bool eog);
  // Whether the budget is spent inside thinking.
  bool spent() const { return in_thinking_ && s_.budget >= 0 && reasoning_ >= static_cast<std::uint64_t>(s_.budget); }
  bool answer_after_eos() const { return s_.open >= 0 && s_.answer_after_eos; }
  // Sampled tokens next() passes through before it replaces one for the budget or the answer's
  // start (a decoder verifying several tokens a round stops there); -1: no such limit known now
  // (a close the model writes itself, an end of sequence: a replacement may still come).
  std::int64_t unforced() const {
    if (!pending_.empty() || answer_due()) return 0;
    if (s_.open >= 0 && in_thinking_ && s_.budget >= 0) return std::max<std::int64_t>(0, s_.budget - std::int64_t(reasoning_));
    return -1;
  }
  bool in_thinking() const { return in_thinking_; }
  std::uint32_t reasoning_tokens() const { return reasoning_; }
  Closed forced() const { return forced_; }  // why the last forced close came, if one did

 private:
  void observe(TokenId id);
  // The forced answer start comes with the next token (outside thinking, the answer not begun).
  bool answer_due() const { return !answered_ && !s_.answer_start.empty() && !in_thinking_; }
  ThinkingSettings s_;
  bool answered_ = false;     // the answer's first token is decided
  bool own_close_ = false;    // the last token was a </think> the model wrote itself
  bool in_thinking_ = false;
  std::uint32_t reasoning_ = 0;
  std::deque<TokenId> pending_;  // the rest of a forced close
  Closed forced_ = Closed::no;
};

const char* closed_name(ThinkingControl::Closed c);

}  // namespace graft::server
