#include "dflash_drafter.hpp"

#include <algorithm>

#include "best_first_tree.hpp"

namespace graft::dflash2 {

namespace {
std::string n(std::int64_t v) { return std::to_string(v); }
}  // namespace

DFlashDrafter::DFlashDrafter(std::shared_ptr<const DFlashFile> file, const DrafterOptions& o, const PolicyOptions& p)
    : f_(std::move(file)), o_(o), policy_(p) {}

Expected<DrafterOptions> DFlashDrafter::checked(const DFlashFile& file, const DrafterOptions& options) {
  DrafterOptions o = options;
  const std::uint32_t B = file.block_size;
  if (o.max_draft == 0) o.max_draft = B - 1;
  if (o.max_draft > B - 1)
    return Status(Errc::out_of_range, file.path + ": max_draft = " + n(o.max_draft) + " needs a block of " +
                                          n(o.max_draft + 1) + " rows, but dflash.block_size is " + n(B));
  if (o.selector && file.has_selector && o.top_k > file.selector_top_k)
    return Status(Errc::out_of_range, file.path + ": top_k = " + n(o.top_k) + " is more than the selector's " +
                                          n(file.selector_top_k) + " candidates (dflash.selector_top_k)");
  return o;
}

Expected<DrafterMemory> DFlashDrafter::memory(const DrafterHost& host, const DFlashFile& file, const DrafterOptions& options) {
  auto o = checked(file, options);
  if (!o) return std::move(o).status();
  auto m = DFlashPass::memory(host, file);
  if (!m) return m;
  m->shared_weights = true;  // one file for every sequence of a target (the factory's cache)
  m->needs.taps = file.target_layers;  // needs(): token-major rows of these taps, on the host
  return m;
}

Expected<std::unique_ptr<DFlashDrafter>> DFlashDrafter::create(const DrafterHost& host, std::shared_ptr<const DFlashFile> file,
                                                               const DrafterOptions& options) {
  auto checked_options = checked(*file, options);
  if (!checked_options) return std::move(checked_options).status();
  const DrafterOptions o = *checked_options;
  const std::uint32_t B = file->block_size;
  const bool selector = o.selector && file->has_selector;
  PolicyOptions p;
  p.long_rows = o.max_draft + 1;
  p.short_rows = o.short_block ? o.short_block : std::max(2u, p.long_rows / 2);
  p.adaptive = o.adaptive;
  std::unique_ptr<DFlashDrafter> d(new DFlashDrafter(file, o, p));
  d->use_selector_ = selector;
  auto pass = DFlashPass::create(host, std::move(file));
  if (!pass) return std::move(pass).status();
  d->pass_ = std::move(*pass);
  // The queue's memory up front (it is trimmed at twice the window), and written once: no growth
  // and no page faults in the rounds (a first touch of a page cost 20-60 us per round on a VM host
  // while the queue filled, more than the rest of the round's host work).
  if (o.resume_window > 0) {
    d->pending_.resize(std::size_t(2 * o.resume_window + B) * d->f_->feature_width);
    d->pending_.clear();
  }
  return d;
}

DrafterNeeds DFlashDrafter::needs() const {
  DrafterNeeds needs;
  needs.taps = f_->target_layers;  // token-major rows of these taps are fc's input as they come
  return needs;
}

std::uint32_t DFlashDrafter::held() const {
  return pass_->context() + static_cast<std::uint32_t>(pending_.size() / f_->feature_width);
}

Status DFlashDrafter::add(const CommitInfo& info) {
  // A cut-back context is exact to rebuild: a token's K/V depend on its own hidden states only.
  if (info.first < held()) GRAFT_TRY(truncate_context(info.first));
  if (info.first != held())
    return Status(Errc::invalid_argument, "dflash2: the drafter holds " + n(held()) +
                                              " context tokens but the commit starts at token " + n(info.first));
  const std::uint32_t m = info.n_committed - info.first;
  const HiddenStates& h = info.hidden;
  if (h.n_tokens != m || h.n_embd * h.n_per_token != f_->feature_width ||
      h.n_per_token != f_->target_layers.size() || (m > 0 && !h.data))
    return Status(Errc::invalid_argument, "dflash2: the commit's hidden states (" + n(h.n_tokens) + " tokens x " +
                                              n(h.n_per_token) + " x " + n(h.n_embd) + ") are not the " + n(m) +
                                              " x " + n(f_->target_layers.size()) + " taps asked for");
  // Queued until the next proposal: a round in which the mix does not ask this drafter costs a
  // copy, and the context K/V of several rounds then run as one batch.
  pending_.insert(pending_.end(), h.data, h.data + std::size_t(m) * f_->feature_width);
  return Status::success();
}

void DFlashDrafter::skip_queued(std::uint32_t keep) {
  const auto m = static_cast<std::uint32_t>(pending_.size() / f_->feature_width);
  if (m <= keep) return;
  pass_->skip(m - keep);
  pending_.erase(pending_.begin(), pending_.begin() + std::size_t(m - keep) * f_->feature_width);
}

Status DFlashDrafter::flush(std::uint32_t window) {
  if (pending_.empty()) return Status::success();
  if (window > 0) skip_queued(window);
  const auto m = static_cast<std::uint32_t>(pending_.size() / f_->feature_width);
  const std::uint32_t before = pass_->context();
  const Status st = pass_->add_context(m, pending_.data());
  // What reached the pass leaves the queue, also on a failure, so the context count stays exact.
  pending_.erase(pending_.begin(), pending_.begin() + std::size_t(pass_->context() - before) * f_->feature_width);
  return st;
}

Status DFlashDrafter::truncate_context(std::uint32_t count) {
  if (count >= pass_->context()) {
    pending_.resize(std::min(pending_.size(), std::size_t(count - pass_->context()) * f_->feature_width));
    return Status::success();
  }
  pending_.clear();
  return pass_->truncate(count);
}

Status DFlashDrafter::begin(const CommitInfo& info) {
  proposed_ = false;  // a new prompt piece: no round in flight
  // The prompt's context K/V run at once, with the target's prefill; the rounds' wait.
  GRAFT_TRY(add(info));
  return flush(0);  // a prompt runs whole
}

Status DFlashDrafter::accept(const CommitInfo& info) {
  round_tokens_ = info.n_committed - info.first;  // the pending token and the accepted drafts
  ++rounds_since_proposal_;
  GRAFT_TRY(add(info));
  // Rounds without a proposal: the queue keeps no more than the window will run (trimmed at twice
  // the window, so the move is rare), so its memory stays the same pages.
  if (o_.resume_window > 0 && pending_.size() / f_->feature_width >= 2 * std::size_t(o_.resume_window))
    skip_queued(o_.resume_window);
  return Status::success();
}

Status DFlashDrafter::truncate(std::uint32_t count) {
  proposed_ = false;
  return truncate_context(count);
}

Status DFlashDrafter::make_choices(std::int32_t anchor, std::uint32_t slots) {
  const float* logits = pass_->logits().data();
  if (!use_selector_) {
    choices_ = plain_choices(logits, f_->n_vocab, slots, o_.top_k);
    return Status::success();
  }
  // Each slot's top candidates, then the selector's rows: predecessors (the anchor, then the
  // candidates of slots 1..slots-1) and successors (the candidates of every slot).
  std::vector<std::vector<std::int32_t>> cand;
  std::vector<std::int32_t> prev{anchor}, next;
  for (std::uint32_t s = 0; s < slots; ++s) {
    cand.push_back(top_ids(logits + std::size_t(s) * f_->n_vocab, f_->n_vocab, f_->selector_top_k));
    next.insert(next.end(), cand.back().begin(), cand.back().end());
    if (s + 1 < slots) prev.insert(prev.end(), cand.back().begin(), cand.back().end());
  }
  GRAFT_TRY(pass_->selector_rows(*f_->sel_prev, prev, prev_rows_));
  GRAFT_TRY(pass_->selector_rows(*f_->sel_next, next, next_rows_));
  const SelectorRows rows{f_->selector_rank, pass_->gate().data(), prev_rows_.data(), next_rows_.data()};
  choices_ = selector_choices(logits, f_->n_vocab, cand, rows, o_.top_k);
  return Status::success();
}

Status DFlashDrafter::propose(const DraftRequest& request, DraftTree& out) {
  const auto now = std::chrono::steady_clock::now();
  // The previous round, timed from its proposal to this one (the verify pass included); not
  // when the host skipped this drafter in later rounds (their time is not the block's doing).
  if (proposed_ && rounds_since_proposal_ == 1)
    policy_.round(round_tokens_, std::chrono::duration<double>(now - proposed_at_).count());
  proposed_ = false;
  GRAFT_TRY(flush(o_.resume_window));
  if (request.context.size() != std::size_t(pass_->context()) + 1)
    return Status(Errc::invalid_argument, "dflash2: out of step with the context (" + n(request.context.size()) +
                                              " tokens, " + n(pass_->context()) + " in the drafter)");
  // The block's lm_head runs for the slots the tree can use only: no deeper than asked, and no
  // more slots than the node budget can reach (a slot's node needs one of every slot before it).
  const std::uint32_t depth = std::min({o_.max_draft, request.max_depth, request.max_nodes, policy_.rows() - 1});
  if (depth == 0 || request.max_nodes == 0) return Status::success();
  const std::int32_t anchor = request.context.back();  // the pending token: slot 0 of the block
  GRAFT_TRY(pass_->run_block(anchor, depth + 1));
  GRAFT_TRY(make_choices(anchor, depth));
  best_first_tree(choices_, request.max_nodes, depth, out);
  proposed_at_ = now;
  proposed_ = true;
  rounds_since_proposal_ = 0;
  return Status::success();
}

}  // namespace graft::dflash2
