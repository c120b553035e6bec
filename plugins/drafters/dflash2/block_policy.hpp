// Adaptive block size: DFlash proposes a whole block per pass, and when the target keeps only the
// first few drafts the long block's last slots are work (drafter rows, tree nodes) that rarely
// pays. The policy runs the long block until, over a window of rounds, fewer than a quarter of
// the rounds accepted more drafts than the short block proposes; then the short block. Every
// probe_every rounds on the short block (or after 2 windows in which at least half the rounds
// accepted the whole short block) it probes the long block for one window and keeps it only when
// the measured tokens per second beat the short block's last window. Output never depends on it.
#pragma once

#include <cstdint>

namespace graft::dflash2 {

struct PolicyOptions {
  std::uint32_t long_rows = 8;   // block rows: the anchor plus the slots drafted
  std::uint32_t short_rows = 4;
  bool adaptive = true;          // false: always the long block
  std::uint32_t window = 8;      // rounds per measurement
  std::uint32_t probe_every = 64;
};

class BlockPolicy {
 public:
  enum class Mode { long_block, short_block, probe };

  explicit BlockPolicy(const PolicyOptions& o);
  std::uint32_t rows() const noexcept { return mode_ == Mode::short_block ? o_.short_rows : o_.long_rows; }
  Mode mode() const noexcept { return mode_; }
  // One round's result: the tokens it committed (the pending token and the accepted drafts) and
  // its wall time from this drafter's propose to the next (<= 0: not measured).
  void round(std::uint32_t tokens, double seconds);

 private:
  struct Window {
    std::uint32_t rounds = 0, past_short = 0, whole_short = 0;
    double tokens = 0, timed_tokens = 0, seconds = 0;
    double rate() const { return seconds > 0 ? timed_tokens / seconds : 0; }
  };
  void enter(Mode m);

  PolicyOptions o_;
  Mode mode_ = Mode::long_block;
  Window w_;
  double short_rate_ = 0;        // tokens/s over the short block's last full window
  std::uint32_t since_probe_ = 0;
  std::uint32_t eager_windows_ = 0;  // consecutive short windows that accepted whole short blocks
};

}  // namespace graft::dflash2
