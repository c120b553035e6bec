#include "block_policy.hpp"

#include <algorithm>

namespace graft::dflash2 {

BlockPolicy::BlockPolicy(const PolicyOptions& o) : o_(o) {
  o_.short_rows = std::min(o_.short_rows, o_.long_rows);
  o_.window = std::max(1u, o_.window);
}

void BlockPolicy::enter(Mode m) {
  mode_ = m;
  w_ = Window{};
  if (m == Mode::short_block) since_probe_ = 0, eager_windows_ = 0;
}

void BlockPolicy::round(std::uint32_t tokens, double seconds) {
  if (!o_.adaptive || o_.short_rows == o_.long_rows) return;
  ++w_.rounds;
  w_.tokens += tokens;
  if (seconds > 0) w_.timed_tokens += tokens, w_.seconds += seconds;
  // tokens = accepted drafts + 1: past the short block when more than short_rows - 1 were accepted.
  if (tokens > o_.short_rows) ++w_.past_short;
  if (tokens >= o_.short_rows) ++w_.whole_short;
  if (mode_ == Mode::short_block) ++since_probe_;
  if (w_.rounds < o_.window) return;
  switch (mode_) {
    case Mode::long_block:
      if (4 * w_.past_short < w_.rounds) return enter(Mode::short_block);
      break;
    case Mode::short_block:
      short_rate_ = w_.rate();
      eager_windows_ = 2 * w_.whole_short >= w_.rounds ? eager_windows_ + 1 : 0;
      if (since_probe_ >= o_.probe_every || eager_windows_ >= 2) return enter(Mode::probe);
      break;
    case Mode::probe:
      // Keep the long block only for a measured gain; unmeasured counts as none.
      return enter(w_.rate() > short_rate_ && short_rate_ > 0 ? Mode::long_block : Mode::short_block);
  }
  w_ = Window{};
}

}  // namespace graft::dflash2
