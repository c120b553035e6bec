#include "speculative/speculative_decoder.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include "speculative/tree_walk.hpp"

namespace graft {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
constexpr std::uint64_t kLearnRounds = 3;   // rounds before the cost-based choices start
constexpr std::uint64_t kProbeEvery = 16;   // a skipped drafter proposes again after this many rounds,
constexpr std::uint64_t kProbeMax = 128;    // ... doubling while it stays not worth its cost
constexpr double kCheapPropose = 0.25;      // of a decode step: below it a drafter is never skipped
constexpr double kCostDecay = 0.9;          // propose time and node counts: about the last 10 rounds
}  // namespace

SpeculativeDecoder::SpeculativeDecoder(std::vector<DrafterSlot> drafters, const SpeculativeOptions& options,
                                       std::shared_ptr<const void> owners)
    : owners_(std::move(owners)), drafters_(std::move(drafters)), options_(options), fusion_(drafters_.size()) {
  for (const DrafterSlot& d : drafters_) {
    taps_.insert(taps_.end(), d.needs().taps.begin(), d.needs().taps.end());
    normed_ = normed_ || d.needs().normed_output;
    stats_.drafters.push_back(DrafterStats{d.name()});
  }
  std::sort(taps_.begin(), taps_.end());
  taps_.erase(std::unique(taps_.begin(), taps_.end()), taps_.end());
  for (const DrafterSlot& d : drafters_) {
    std::vector<std::uint32_t> idx;
    for (std::int32_t t : d.needs().taps)
      idx.push_back(static_cast<std::uint32_t>(std::lower_bound(taps_.begin(), taps_.end(), t) - taps_.begin()));
    if (d.needs().normed_output) idx.push_back(static_cast<std::uint32_t>(taps_.size()));  // the block after the taps
    tap_of_.push_back(std::move(idx));
  }
  trees_.resize(drafters_.size());
  propose_seconds_.assign(drafters_.size(), 0.0);
  proposed_nodes_.assign(drafters_.size(), 0.0);
  proposed_last_.assign(drafters_.size(), 0);
  cost_seen_.assign(drafters_.size(), 0);
  probe_interval_.assign(drafters_.size(), kProbeEvery);
  next_probe_.assign(drafters_.size(), 0);
}

bool SpeculativeDecoder::worth_drafting(std::size_t d) {
  if (!options_.adaptive || stats_.rounds < kLearnRounds || !fusion_.has_value(d) || cost_.estimate(1) <= 0)
    return true;
  // A drafter whose proposing costs next to nothing is never skipped: the verify budget already
  // leaves out its nodes that do not pay.
  if (propose_seconds_[d] < kCheapPropose * cost_.estimate(1)) return true;
  // Tokens per second of recent rounds with its proposal (its propose time, the whole verify
  // pass) against without (the others' best accepted length, a pass without its own nodes).
  const double others = fusion_.others_tokens(d), nodes = fusion_.tree_nodes(d);
  const auto rows = [](double n) { return static_cast<std::uint32_t>(std::lround(n)) + 1; };
  const double with = (1 + others + fusion_.value_tokens(d)) / (cost_.estimate(rows(nodes)) + propose_seconds_[d]);
  const double without = (1 + others) / cost_.estimate(rows(std::max(0.0, nodes - fusion_.own_nodes(d))));
  if (with >= without) {
    probe_interval_[d] = kProbeEvery;
    next_probe_[d] = 0;
    return true;
  }
  // Skipped, but proposing again now and then keeps its value measured; each probe that finds it
  // still not worth its cost waits twice as long for the next (up to kProbeMax rounds).
  if (next_probe_[d] == 0) {
    next_probe_[d] = round_ + probe_interval_[d];
    return false;
  }
  if (round_ < next_probe_[d]) return false;
  probe_interval_[d] = std::min(2 * probe_interval_[d], kProbeMax);
  next_probe_[d] = round_ + probe_interval_[d];
  return true;
}

std::uint32_t SpeculativeDecoder::draft_depth(std::size_t d, std::uint32_t max_depth) const {
  if (options_.draft_length > 0) return std::min(max_depth, options_.draft_length);
  if (!options_.adaptive || stats_.rounds < kLearnRounds || cost_.estimate(1) <= 0) return max_depth;
  // The chain length k maximising (1 + expected accepted) / (verify of k + 1 rows + drafting k
  // nodes), with the drafter's learnt chances by depth; one more than that, so the merge has a
  // choice.
  const double per_node = proposed_nodes_[d] > 0 ? propose_seconds_[d] / proposed_nodes_[d] : 0.0;
  double reach = 1.0, expected = 1.0, best_rate = 1.0 / cost_.estimate(1);
  std::uint32_t best = 0;
  for (std::uint32_t k = 1; k <= max_depth; ++k) {
    reach *= fusion_.depth_chance(d, k);
    expected += reach;
    const double rate = expected / (cost_.estimate(k + 1) + k * per_node);
    if (rate > best_rate) best_rate = rate, best = k;
  }
  return std::min(max_depth, best + 1);
}

HiddenStates SpeculativeDecoder::hidden_for(std::size_t d, const ForwardOutput& out, std::uint32_t n_rows,
                                            std::span<const std::uint32_t> rows, std::uint32_t n_embd) {
  const auto& idx = tap_of_[d];
  HiddenStates h;
  h.n_tokens = static_cast<std::uint32_t>(rows.size());
  h.n_embd = n_embd;
  h.n_per_token = static_cast<std::uint32_t>(idx.size());
  if (idx.empty()) return h;
  // ForwardOutput::hidden is tap-major ([tap][row][E]); drafters read token-major ([row][tap][E]).
  hidden_buf_.resize(rows.size() * idx.size() * n_embd);
  float* dst = hidden_buf_.data();
  for (std::uint32_t r : rows)
    for (std::uint32_t t : idx) {
      std::memcpy(dst, out.hidden.data() + (std::size_t(t) * n_rows + r) * n_embd, n_embd * sizeof(float));
      dst += n_embd;
    }
  h.data = hidden_buf_.data();
  return h;
}

void SpeculativeDecoder::sync_stats() {
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    stats_.drafters[d].failures = drafters_[d].stats().failures;
    stats_.drafters[d].seconds = drafters_[d].stats().seconds;
  }
}

Status SpeculativeDecoder::prefill(Session& s, std::span<const TokenId> prompt) {
  for (DrafterSlot& d : drafters_) d.restart();
  last_prompt_token_pending_ = false;
  const std::uint32_t E = s.model().params().n_embd;
  // The prompt in pieces of max_batch rows, each handing its hidden states to the drafters; the
  // prompt's last token waits for its pending token (the first sampled one).
  for (std::size_t pos = 0; pos < prompt.size(); pos += s.max_batch()) {
    const auto n = static_cast<std::uint32_t>(std::min<std::size_t>(s.max_batch(), prompt.size() - pos));
    const auto n_past = static_cast<std::uint32_t>(s.tokens().size());
    const SequenceRows seq{&s.kv(), n, n_past, nullptr};
    const std::uint32_t last = n - 1;
    ForwardBatch batch;
    batch.tokens = prompt.subspan(pos, n);
    batch.sequences = std::span(&seq, 1);
    batch.logit_rows = std::span(&last, 1);
    batch.hidden_layers = taps_;
    batch.hidden_normed_output = normed_;
    if (Status st = s.forward(batch, held_); !st.ok()) {
      (void)s.truncate(n_past);
      return st;
    }
    all_rows_.resize(n);
    std::iota(all_rows_.begin(), all_rows_.end(), 0u);
    GRAFT_TRY(s.commit_rows(batch.tokens, all_rows_, held_.logits));
    if (pos + n == prompt.size()) {
      // All but the last token now (the drafters see it as pending); it follows at the first step.
      last_prompt_hidden_.resize(drafters_.size());
      const std::uint32_t last_row = n - 1;
      for (std::size_t d = 0; d < drafters_.size(); ++d) {
        const HiddenStates h = hidden_for(d, held_, n, std::span(&last_row, 1), E);
        last_prompt_hidden_[d].assign(h.data, h.data + std::size_t(h.n_per_token) * E);
      }
      begin_drafters(prompt, n_past, n, E);
      last_prompt_token_pending_ = true;
      break;
    }
    begin_drafters(prompt.first(pos + n + 1), n_past, n, E);  // the next prompt token is this piece's pending one
  }
  return Status::success();
}

void SpeculativeDecoder::begin_drafters(std::span<const TokenId> context, std::uint32_t first, std::uint32_t pass_rows,
                                        std::uint32_t n_embd) {
  CommitInfo info;
  info.context = context;
  info.n_committed = static_cast<std::uint32_t>(context.size() - 1);
  info.first = first;
  all_rows_.resize(info.n_committed - first);  // held_'s first rows: the committed ones
  std::iota(all_rows_.begin(), all_rows_.end(), 0u);
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    info.hidden = hidden_for(d, held_, pass_rows, all_rows_, n_embd);
    drafters_[d].begin(info);
  }
}

Status SpeculativeDecoder::step(Session& s, Sampler& sampler, TokenId pending, std::uint32_t max_new,
                                std::vector<TokenId>& out) {
  const Model& model = s.model();
  const std::uint32_t n_vocab = model.params().n_vocab, E = model.params().n_embd;
  const auto n_past = static_cast<std::uint32_t>(s.tokens().size());
  context_.assign(s.tokens().begin(), s.tokens().end());
  context_.push_back(pending);
  auto t0 = Clock::now();

  // The prompt's last token reaches the drafters now that its pending token is known.
  if (last_prompt_token_pending_) {
    last_prompt_token_pending_ = false;
    CommitInfo info;
    info.context = context_;
    info.n_committed = n_past;
    info.first = n_past - 1;
    for (std::size_t d = 0; d < drafters_.size(); ++d) {
      info.hidden.n_tokens = 1;
      info.hidden.n_embd = E;
      info.hidden.n_per_token = static_cast<std::uint32_t>(tap_of_[d].size());
      info.hidden.data = tap_of_[d].empty() ? nullptr : last_prompt_hidden_[d].data();
      drafters_[d].accept(info);
    }
  }

  // 1. Draft: the budget is what the round may verify and commit (max_new - 1 drafts at most:
  // the target's own token comes on top), the batch rows and the KV slots left.
  TreeBudget budget;
  budget.max_depth = std::min(options_.max_depth, max_new - 1);
  const std::uint64_t slots = s.capacity() - n_past - 1;
  budget.max_nodes = static_cast<std::uint32_t>(
      std::min<std::uint64_t>({options_.max_nodes, s.max_batch() - 1, slots}));
  if (budget.max_depth == 0) budget.max_nodes = 0;
  std::vector<const DraftTree*> proposals;
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    trees_[d].clear();
    if (budget.max_nodes > 0 && worth_drafting(d)) {
      DraftRequest req;
      req.context = context_;
      req.max_nodes = budget.max_nodes;
      req.max_depth = draft_depth(d, budget.max_depth);
      req.sampling = !sampler.greedy();
      const auto tp = Clock::now();
      drafters_[d].propose(req, trees_[d]);
      // The steady cost only: a drafter back from skipped rounds may catch up on them first.
      if (proposed_last_[d] || !cost_seen_[d]) {
        const double w = cost_seen_[d] ? kCostDecay : 0.0;  // the first sample sets the mean
        propose_seconds_[d] = w * propose_seconds_[d] + (1 - w) * since(tp);
        proposed_nodes_[d] = w * proposed_nodes_[d] + (1 - w) * double(trees_[d].size());
        cost_seen_[d] = proposed_last_[d];  // a first sample after a gap is replaced by the next steady one
      }
      proposed_last_[d] = 1;
    } else if (budget.max_nodes > 0) {
      ++stats_.drafters[d].skipped;
      proposed_last_[d] = 0;
    }
    proposals.push_back(&trees_[d]);
  }
  std::function<float(std::size_t, std::uint32_t, float)> conditional;
  if (options_.adaptive)
    conditional = [this](std::size_t d, std::uint32_t depth, float q) { return fusion_.conditional(d, depth, q); };
  tree_.build(proposals, budget, n_vocab, conditional);
  if (options_.adaptive && !tree_.empty()) {
    // Keep the best n nodes that maximise expected tokens per second; now and then verify one
    // anyway, so the acceptance estimates keep learning when the drafts looked too poor.
    std::uint32_t n = cost_.best_count(tree_.scores_best_first());
    // Every 16th round explores a bigger pass, so the cost model sees more than one size (every
    // 8th measured 3% slower on bench/spec code_repeat: the per-size costs need fewer samples).
    if (++explore_ % 16 == 0) n = std::max(n + 2, 2 * n);
    if (n > 0) starved_ = 0;
    else if (++starved_ >= 8) n = 1, starved_ = 0;
    if (n < tree_.size()) {
      TreeBudget cut = budget;
      cut.max_nodes = n;
      tree_.build(proposals, cut, n_vocab, conditional);
    }
  }
  stats_.draft_seconds += since(t0);

  // 2. Verify: [pending, nodes...] in one pass, every row's logits and the drafters' taps.
  t0 = Clock::now();
  tree_.verify_tokens(pending, verify_tokens_);
  const auto n_rows = static_cast<std::uint32_t>(verify_tokens_.size());
  tree_.verify_positions(n_past, positions_);
  if (!tree_.empty()) tree_.ancestor_mask(mask_);
  const SequenceRows seq{&s.kv(), n_rows, n_past, tree_.empty() ? nullptr : mask_.data()};
  all_rows_.resize(n_rows);
  std::iota(all_rows_.begin(), all_rows_.end(), 0u);
  ForwardBatch batch;
  batch.tokens = verify_tokens_;
  batch.positions = positions_;
  batch.sequences = std::span(&seq, 1);
  batch.logit_rows = all_rows_;
  batch.hidden_layers = taps_;
  batch.hidden_normed_output = normed_;
  if (Status st = s.forward(batch, out_); !st.ok()) {
    (void)s.truncate(n_past);
    return st;
  }
  const double verify_seconds = since(t0);
  stats_.verify_seconds += verify_seconds;
  // The first passes, and the first pass of more rows than any before, pay for warming caches and
  // growing scratch memory: they would teach the cost model a slope the machine does not have.
  if (stats_.rounds >= 4 && n_rows <= widest_pass_) cost_.record(n_rows, verify_seconds);
  widest_pass_ = std::max(widest_pass_, n_rows);

  // 3. Accept: the walk draws the target's tokens as plain decoding would.
  t0 = Clock::now();
  const WalkResult walk = walk_tree(tree_, out_.logits, n_vocab, sampler, context_);
  stats_.accept_seconds += since(t0);

  // 4. Roll back: the KV cache keeps the pending token and the path; the drafters learn them.
  t0 = Clock::now();
  std::vector<std::uint32_t> kept{0};
  std::vector<TokenId> committed{pending};
  for (std::int32_t node : walk.path) {
    kept.push_back(static_cast<std::uint32_t>(node) + 1);
    committed.push_back(tree_.token(static_cast<std::size_t>(node)));
  }
  const auto last_row = std::span<const float>(out_.logits).subspan(std::size_t(kept.back()) * n_vocab, n_vocab);
  GRAFT_TRY(s.commit_rows(committed, kept, last_row));
  // context_ now holds the committed tokens and the path: add the target's token as the pending one.
  context_.push_back(walk.next);
  CommitInfo info;
  info.context = context_;
  info.n_committed = n_past + static_cast<std::uint32_t>(committed.size());
  info.first = n_past;
  info.verified_nodes = static_cast<std::uint32_t>(tree_.size());
  std::vector<std::int32_t> mine;
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    // The path as drafter d's own node indices, as far as its tree follows it.
    mine.clear();
    for (std::int32_t node : walk.path) {
      std::int32_t own = -1;
      for (std::size_t j = 0; j < trees_[d].size(); ++j)
        if (tree_.node_of(d, j) == node) own = static_cast<std::int32_t>(j);
      if (own < 0) break;
      mine.push_back(own);
    }
    info.accepted_nodes = mine;
    info.hidden = hidden_for(d, out_, n_rows, kept, E);
    drafters_[d].accept(info);
  }
  stats_.rollback_seconds += since(t0);

  // 5. Metrics.
  ++stats_.rounds;
  ++round_;
  stats_.drafted += tree_.size();
  stats_.accepted += walk.path.size();
  stats_.emitted += walk.path.size() + 1;
  std::vector<char> on_path(tree_.size(), 0);
  for (std::int32_t node : walk.path) on_path[static_cast<std::size_t>(node)] = 1;
  std::vector<char> proposed_any(drafters_.size(), 0);
  std::vector<std::uint32_t> own_nodes(drafters_.size(), 0);
  for (std::size_t i = 0; i < tree_.size(); ++i) {
    stats_.depth.count(tree_.depth(i), on_path[i]);
    const std::uint64_t who = tree_.proposers(i);
    const int n_who = std::popcount(who);
    for (std::size_t d = 0; d < drafters_.size(); ++d) {
      if (!(who >> (d % 64) & 1)) continue;
      DrafterStats& ds = stats_.drafters[d];
      ++ds.proposed;
      ds.accepted += on_path[i] ? 1 : 0;
      // A token several drafters proposed is credited to each in equal parts.
      ds.accepted_share += on_path[i] ? 1.0 / n_who : 0.0;
      ds.depth.count(tree_.depth(i), on_path[i]);
      proposed_any[d] = 1;
      own_nodes[d] += n_who == 1 ? 1 : 0;
    }
  }
  for (std::size_t d = 0; d < drafters_.size(); ++d) stats_.drafters[d].rounds += proposed_any[d] ? 1 : 0;
  sync_stats();
  // Full information: every proposal, kept or cut, scored against the verified continuation.
  committed.push_back(walk.next);  // the continuation the target verified: path, then its token
  fusion_.learn(proposals, std::span<const TokenId>(committed).subspan(1), own_nodes,
                static_cast<std::uint32_t>(tree_.size()));
  committed.pop_back();

  out.insert(out.end(), committed.begin() + 1, committed.end());
  out.push_back(walk.next);
  return Status::success();
}

}  // namespace graft
