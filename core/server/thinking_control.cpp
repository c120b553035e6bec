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
  if (s_.open < 0) return sampled;
  if (pending_.empty() && in_thinking_ && sampled != s_.close) {
    // The budget is checked with >= (spent()), so one already overshot still closes.
    const bool ended = eog && s_.answer_after_eos;
    if (spent() || ended) {
      pending_.assign(s_.close_text.begin(), s_.close_text.end());
      forced_ = spent() ? Closed::budget : Closed::end_of_sequence;
    }
  }
  TokenId id = sampled;
  if (!pending_.empty()) {
    id = pending_.front();
    pending_.pop_front();
  }
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
