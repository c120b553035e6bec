// One drafter of a session, behind a guard: every call into the plugin is wrapped so that an
// error status or an exception becomes one warning line naming the drafter and what it was doing,
// never a crash and never a changed output. A failed or invalid proposal skips the drafter for
// that round; a failed begin/accept/truncate (its state is then unknown) disables it until the
// next sequence.
#pragma once

#include <memory>
#include <string>

#include <fmt/format.h>

#include <exception>

#include "graft/drafter.hpp"
#include "speculative/spec_stats.hpp"

namespace graft {

// Runs fn, a call into plugin code returning Status or Expected<T>, turning any exception it
// throws into that type's error ("exception: WHAT" or "unknown exception").
template <class F>
auto catch_plugin_exceptions(F&& fn) -> decltype(fn()) {
  try {
    return fn();
  } catch (const std::exception& e) {
    return Status(Errc::internal, fmt::format("exception: {}", e.what()));
  } catch (...) {
    return Status(Errc::internal, "unknown exception");
  }
}

class DrafterSlot {
 public:
  DrafterSlot(std::string name, std::shared_ptr<Drafter> drafter, std::uint32_t n_vocab);

  const std::string& name() const { return name_; }
  bool active() const { return active_; }
  // Whether restart() can make it active (false: its needs() failed, it is off for good).
  bool usable() const { return needs_ok_; }
  const DrafterNeeds& needs() const { return needs_; }
  DrafterStats& stats() { return stats_; }
  const DrafterStats& stats() const { return stats_; }

  // A new sequence: truncate(0), and active again if that works.
  void restart();
  void begin(const CommitInfo& info);
  // The proposal, checked (empty when it failed or was malformed).
  void propose(const DraftRequest& request, DraftTree& out);
  void accept(const CommitInfo& info);
  void truncate(std::uint32_t n);

 private:
  // Runs fn (returning Status) under the guard; false on failure, with the warning given.
  template <class F>
  bool guarded(const char* what, bool disable_on_failure, F&& fn);

  std::string name_;
  std::shared_ptr<Drafter> drafter_;
  std::uint32_t n_vocab_;
  DrafterNeeds needs_;
  bool active_ = true;
  bool needs_ok_ = true;  // false: needs() failed, so the drafter stays off for every sequence
  bool warned_ = false;  // one warning per sequence for proposals
  DrafterStats stats_;
};

}  // namespace graft
