#include "server/thinking_control.hpp"

namespace graft::server {

ThinkingSettings thinking_tokens(const Tokenizer& tok) {
  ThinkingSettings s;
  const TokenId open = tok.find("<think>"), close = tok.find("</think>");
  if (open < 0 || close < 0) return s;
  TokenizeOptions opt;
  opt.parse_special = true;
  auto ids = tok.encode("</think>\n\n", opt);
  if (!ids || ids->empty() || ids->front() != close) return s;
  s.open = open;
  s.close = close;
  s.close_text = std::move(*ids);
  return s;
}

bool opens_thinking(std::span<const TokenId> prompt, const ThinkingSettings& s) {
  if (s.open < 0) return false;
  for (auto it = prompt.rbegin(); it != prompt.rend(); ++it) {
    if (*it == s.close) return false;
    if (*it == s.open) return true;
  }
  return false;
}

void ThinkingControl::observe(TokenId id) {
  if (id == s_.open) {
    in_thinking_ = true;
  } else if (id == s_.close) {
    in_thinking_ = false;
  } else if (in_thinking_) {
    ++reasoning_;
  }
}

TokenId ThinkingControl::next(TokenId sampled, bool eog) {
  if (pending_.empty()) {
    if (s_.open >= 0 && in_thinking_ && sampled != s_.close) {
      // The budget is checked with >= (spent()), so one already overshot still closes.
      const bool ended = eog && s_.answer_after_eos;
      if (spent() || ended) {
        pending_.assign(s_.close_text.begin(), s_.close_text.end());
        forced_ = spent() ? Closed::budget : Closed::end_of_sequence;
        if (!answered_) pending_.insert(pending_.end(), s_.answer_start.begin(), s_.answer_start.end());
        answered_ = true;
      }
    } else if (answer_due() && !(s_.open >= 0 && sampled == s_.open && !own_close_)) {
      // The answer starts here (not a thinking block the model opens first): as the request
      // forces it; after a </think> the model wrote, with the blank line a forced close has.
      if (own_close_) pending_.assign(s_.close_text.begin() + 1, s_.close_text.end());
      pending_.insert(pending_.end(), s_.answer_start.begin(), s_.answer_start.end());
      answered_ = true;
    }
  }
  TokenId id = sampled;
  const bool forced_now = !pending_.empty();
  if (forced_now) {
    id = pending_.front();
    pending_.pop_front();
  }
  own_close_ = !forced_now && s_.open >= 0 && id == s_.close;
  observe(id);
  return id;
}

const char* closed_name(ThinkingControl::Closed c) {
  switch (c) {
    case ThinkingControl::Closed::no: return "no";
    case ThinkingControl::Closed::budget: return "budget";
    case ThinkingControl::Closed::end_of_sequence: return "end_of_sequence";
  }
  return "?";
}

}  // namespace graft::server
