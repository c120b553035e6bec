#include "sampling/stop_checker.hpp"

#include <algorithm>

namespace graft {

StopChecker::StopChecker(std::vector<std::string> stop_strings) {
  for (auto& s : stop_strings)
    if (!s.empty()) stops_.push_back(std::move(s));
}

StopResult StopChecker::push_text(std::string_view bytes) {
  StopResult r;
  if (stopped()) {
    r.reason = reason_;
    return r;
  }
  pending_.append(bytes);

  // Earliest match wins; at the same position the stop string listed first.
  std::size_t best = std::string::npos;
  const std::string* hit = nullptr;
  for (const auto& s : stops_) {
    const std::size_t pos = pending_.find(s);
    if (pos < best) {
      best = pos;
      hit = &s;
    }
  }
  if (hit) {
    r.text = pending_.substr(0, best);
    r.reason = reason_ = StopReason::stop_string;
    r.matched = *hit;
    pending_.clear();
    return r;
  }

  // Hold the longest tail that is a proper prefix of some stop string: only that text can still
  // turn into a match once more bytes arrive.
  std::size_t hold = 0;
  for (const auto& s : stops_) {
    for (std::size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k) {
      if (std::string_view(pending_).substr(pending_.size() - k) == std::string_view(s).substr(0, k)) {
        hold = k;
        break;
      }
    }
  }
  r.text = pending_.substr(0, pending_.size() - hold);
  pending_.erase(0, pending_.size() - hold);
  return r;
}

StopResult StopChecker::push_token(const Tokenizer& tok, TokenId id, bool render_special) {
  if (!stopped() && tok.is_eog(id)) {
    StopResult r;
    r.text = std::move(pending_);
    pending_.clear();
    r.reason = reason_ = StopReason::eog;
    return r;
  }
  return push_text(tok.decode({id}, render_special));
}

std::string StopChecker::flush() {
  std::string out = std::move(pending_);
  pending_.clear();
  return out;
}

}  // namespace graft
