#include "speculative/drafter_slot.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <chrono>

namespace graft {

DrafterSlot::DrafterSlot(std::string name, std::shared_ptr<Drafter> drafter, std::uint32_t n_vocab)
    : name_(std::move(name)), drafter_(std::move(drafter)), n_vocab_(n_vocab) {
  stats_.name = name_;
  needs_ok_ = guarded("needs()", true, [&] {
    needs_ = drafter_->needs();
    return Status::success();
  });
}

template <class F>
bool DrafterSlot::guarded(const char* what, bool disable_on_failure, F&& fn) {
  const auto t0 = std::chrono::steady_clock::now();
  const Status st = catch_plugin_exceptions(fn);
  const std::string why = st.message();
  stats_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (st.ok()) return true;
  ++stats_.failures;
  if (disable_on_failure) {
    active_ = false;
    spdlog::warn("drafter '{}' failed in {}: {}; disabled for this sequence (output is unaffected)", name_, what, why);
  } else if (!warned_) {
    warned_ = true;
    spdlog::warn("drafter '{}' failed in {}: {}; its proposal is skipped (further failures this sequence are counted, "
                 "not shown)", name_, what, why);
  }
  return false;
}

void DrafterSlot::restart() {
  warned_ = false;
  active_ = needs_ok_;
  if (active_) guarded("truncate(0)", true, [&] { return drafter_->truncate(0); });
}

void DrafterSlot::begin(const CommitInfo& info) {
  if (active_) guarded("begin", true, [&] { return drafter_->begin(info); });
}

void DrafterSlot::propose(const DraftRequest& request, DraftTree& out) {
  out.clear();
  if (!active_) return;
  if (!guarded("propose", false, [&] { return drafter_->propose(request, out); })) {
    out.clear();
    return;
  }
  const char* bad = out.invalid(n_vocab_);
  if (!bad && out.size() > request.max_nodes) bad = "it has more nodes than max_nodes";
  if (!bad)
    for (std::size_t i = 0; i < out.size() && !bad; ++i)
      if (out.depth(i) > request.max_depth) bad = "a node is deeper than max_depth";
  if (bad) {
    ++stats_.failures;
    if (!warned_) {
      warned_ = true;
      spdlog::warn("drafter '{}' proposed an invalid tree ({}); the proposal is skipped (further ones this sequence are "
                   "counted, not shown)", name_, bad);
    }
    out.clear();
  }
}

void DrafterSlot::accept(const CommitInfo& info) {
  if (active_) guarded("accept", true, [&] { return drafter_->accept(info); });
}

void DrafterSlot::truncate(std::uint32_t n) {
  if (active_) guarded("truncate", true, [&] { return drafter_->truncate(n); });
}

}  // namespace graft
