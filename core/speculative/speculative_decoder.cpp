#include "speculative/speculative_decoder.hpp"

#include "model/recurrent_state.hpp"

#include <algorithm>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <numeric>

#include <spdlog/spdlog.h>

#include "speculative/policy_file.hpp"
#include "speculative/tree_walk.hpp"

namespace graft {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
RoundPolicyOptions policy_options(const SpeculativeOptions& o) {
  RoundPolicyOptions p;
  p.adaptive = o.adaptive;
  p.draft_length = o.draft_length;
  return p;
}
}  // namespace

SpeculativeDecoder::SpeculativeDecoder(std::vector<DrafterSlot> drafters, const SpeculativeOptions& options,
                                       std::shared_ptr<const void> owners)
    : owners_(std::move(owners)),
      drafters_(std::move(drafters)),
      options_(options),
      policy_(drafters_.size(), policy_options(options)) {
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
    if (!idx.empty()) (d.needs().hidden_in_backend_memory ? wants_device_ : wants_host_) = true;
    tap_of_.push_back(std::move(idx));
  }
  trees_.resize(drafters_.size());
  propose_took_.assign(drafters_.size(), 0.0);
  accept_took_.assign(drafters_.size(), 0.0);
}

void SpeculativeDecoder::use_policy_file(std::filesystem::path path, nlohmann::json identity) {
  policy_file_ = std::move(path);
  policy_identity_ = std::move(identity);
  if (const std::string why = read_policy_file(policy_file_, policy_identity_, policy_); !why.empty())
    spdlog::warn("speculative policy file {}: not used ({}); the policy learns from scratch and the file is replaced "
                 "at the end", policy_file_.string(), why);
}

Status SpeculativeDecoder::save_policy() const {
  return policy_file_.empty() ? Status::success() : write_policy_file(policy_file_, policy_identity_, policy_);
}

bool SpeculativeDecoder::adopt_policy(const SpeculativeDecoder& other) {
  if (&other == this || !RoundPolicy::should_adopt(policy_.learnt_rounds(), other.policy_.learnt_rounds())) return false;
  try {
    policy_.from_json(other.policy_.to_json());  // the same drafters: the same shape
  } catch (const std::exception& e) {
    spdlog::warn("speculative policy: not taken over from another sequence ({})", e.what());
    return false;
  }
  return true;
}

HiddenStates SpeculativeDecoder::hidden_for(std::size_t d, const PassPart& part, std::span<const std::uint32_t> rows,
                                            std::uint32_t n_embd) {
  const auto& idx = tap_of_[d];
  HiddenStates h;
  h.n_tokens = static_cast<std::uint32_t>(rows.size());
  h.n_embd = n_embd;
  h.n_per_token = static_cast<std::uint32_t>(idx.size());
  if (idx.empty()) return h;
  // The pass's taps are tap-major ([tap][row][E]) over the whole pass; drafters read token-major
  // ([row][tap][E]).
  auto src_row = [&](std::uint32_t t, std::uint32_t r) { return (std::size_t(t) * part.total_rows + part.row0 + r) * n_embd; };
  if (in_backend_memory(d)) {
    // In backend memory: gathered there by copies on the stream (a run of consecutive rows of a
    // single tap is one copy), so on a GPU they never leave it.
    const std::size_t floats = rows.size() * idx.size() * n_embd;
    const float* src = part.out->device_hidden_data();
    if (!backend_ || !src || !device_rows_ || floats * sizeof(float) > device_rows_->size()) {
      hidden_status_ = Status(Errc::internal, "speculative decoding: the pass left no hidden states in backend memory "
                                              "for " + drafters_[d].name());
      return h;
    }
    float* dst = static_cast<float*>(device_rows_->data());
    for (std::size_t i = 0; i < rows.size();) {
      std::size_t run = 1;
      if (idx.size() == 1)
        while (i + run < rows.size() && rows[i + run] == rows[i] + run) ++run;
      for (std::size_t j = 0; j < idx.size(); ++j) {
        const Status st = backend_->copy_async(dst + (i * idx.size() + j) * n_embd, MemoryKind::device,
                                               src + src_row(idx[j], rows[i]), MemoryKind::device,
                                               run * n_embd * sizeof(float));
        if (!st.ok() && hidden_status_.ok()) hidden_status_ = st;
      }
      i += run;
    }
    h.data = hidden_status_.ok() ? dst : nullptr;
    h.memory = MemoryKind::device;
    return h;
  }
  hidden_buf_.resize(rows.size() * idx.size() * n_embd);
  float* dst = hidden_buf_.data();
  for (std::uint32_t r : rows)
    for (std::uint32_t t : idx) {
      std::memcpy(dst, part.out->hidden.data() + src_row(t, r), n_embd * sizeof(float));
      dst += n_embd;
    }
  h.data = hidden_buf_.data();
  return h;
}

Status SpeculativeDecoder::keep_last_prompt_row(std::size_t d, const HiddenStates& h) {
  if (!h.data) return Status::success();
  const std::size_t floats = std::size_t(h.n_per_token) * h.n_embd;
  if (h.memory == MemoryKind::host) {
    last_prompt_hidden_[d].assign(h.data, h.data + floats);
    return Status::success();
  }
  float* dst = static_cast<float*>(device_last_->data()) + d * device_last_stride_;
  return backend_->copy_async(dst, MemoryKind::device, h.data, MemoryKind::device, floats * sizeof(float));
}

void SpeculativeDecoder::sync_stats() {
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    stats_.drafters[d].failures = drafters_[d].stats().failures;
    stats_.drafters[d].seconds = drafters_[d].stats().seconds;
  }
}

Status run_planned(Workspace& ws, std::span<const PlannedSequence> seqs, ForwardOutput& out,
                   std::vector<PassPart>& parts) {
  if (seqs.empty()) return Status(Errc::invalid_argument, "run_planned: no sequences");
  std::vector<TokenId> tokens;
  std::vector<std::int32_t> positions;
  std::vector<SequenceRows> rows;
  std::vector<std::uint32_t> logit_rows, argmax_rows, candidate_rows;
  std::uint32_t k = 0;
  for (const PlannedSequence& q : seqs)
    if (q.decoder->has_plan() && !q.decoder->planned().candidate_rows.empty())
      k = std::max(k, q.decoder->planned().candidates);
  std::vector<Session*> sessions;
  parts.assign(seqs.size(), PassPart{});
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    const SpeculativeDecoder& d = *seqs[i].decoder;
    if (!d.has_plan()) return Status(Errc::invalid_argument, "run_planned: a sequence planned no rows");
    const PlannedRows& p = d.planned();
    if (!std::ranges::equal(d.taps(), seqs[0].decoder->taps()) || d.normed() != seqs[0].decoder->normed() ||
        d.hidden_on_host() != seqs[0].decoder->hidden_on_host() ||
        d.hidden_on_device() != seqs[0].decoder->hidden_on_device())
      return Status(Errc::invalid_argument, "run_planned: the decoders ask for different hidden-state taps");
    if (p.tokens.empty() || p.positions.size() != p.tokens.size())
      return Status(Errc::invalid_argument, "run_planned: a sequence planned no rows");
    const auto row0 = static_cast<std::uint32_t>(tokens.size());
    parts[i].row0 = row0;
    parts[i].logit0 = static_cast<std::uint32_t>(logit_rows.size());
    parts[i].argmax0 = static_cast<std::uint32_t>(argmax_rows.size());
    parts[i].candidate0 = static_cast<std::uint32_t>(candidate_rows.size());
    parts[i].candidate_stride = k;
    tokens.insert(tokens.end(), p.tokens.begin(), p.tokens.end());
    positions.insert(positions.end(), p.positions.begin(), p.positions.end());
    for (std::uint32_t r : p.logit_rows) logit_rows.push_back(row0 + r);
    for (std::uint32_t r : p.argmax_rows) argmax_rows.push_back(row0 + r);
    for (std::uint32_t r : p.candidate_rows) candidate_rows.push_back(row0 + r);
    Session& s = *seqs[i].session;
    rows.push_back(SequenceRows{&s.kv(), static_cast<std::uint32_t>(p.tokens.size()),
                                static_cast<std::uint32_t>(s.tokens().size()), p.ancestor});
    sessions.push_back(&s);
  }
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.positions = positions;
  batch.sequences = rows;
  batch.logit_rows = logit_rows;
  batch.argmax_rows = argmax_rows;
  batch.candidate_rows = candidate_rows;
  batch.candidates = k;
  batch.hidden_layers = seqs[0].decoder->taps();
  batch.hidden_normed_output = seqs[0].decoder->normed();
  batch.hidden_on_host = seqs[0].decoder->hidden_on_host();
  batch.hidden_on_device = seqs[0].decoder->hidden_on_device();
  const auto t0 = Clock::now();
  if (Status st = Session::forward_together(ws, sessions, batch, out); !st.ok()) {
    // The stores may hold some of the rows: back to what each session committed.
    for (Session* s : sessions) st = s->recover(std::move(st));
    return st;
  }
  const double seconds = since(t0);
  const auto total = static_cast<std::uint32_t>(tokens.size());
  for (std::size_t i = 0; i < seqs.size(); ++i) {
    parts[i].out = &out;
    parts[i].total_rows = total;
    parts[i].seconds = seconds * double(rows[i].n_tokens) / double(total);
  }
  return Status::success();
}

Expected<std::uint32_t> SpeculativeDecoder::start(Session& s, std::span<const TokenId> prompt, std::uint32_t keep) {
  planned_kind_ = Planned::none;
  // What may stay: committed tokens the drafters know too, the prompt's last token run again (its
  // logits give the first token), and every drafter still in step (one that failed starts afresh).
  const auto shared = static_cast<std::uint32_t>(
      std::mismatch(prompt.begin(), prompt.end(), s.tokens().begin(), s.tokens().end()).first - prompt.begin());
  keep = std::min({keep, shared, told_, static_cast<std::uint32_t>(prompt.empty() ? 0 : prompt.size() - 1)});
  for (const DrafterSlot& d : drafters_)
    if (!d.active() && d.usable()) keep = 0;
  if (keep > 0 && s.truncate(keep).ok()) {
    for (DrafterSlot& d : drafters_) d.truncate(keep);
  } else {
    keep = 0;
    GRAFT_TRY(s.reset());
    for (DrafterSlot& d : drafters_) d.restart();
  }
  // The widest verify pass's logits, written once now: pages first touched in a round cost tens of
  // microseconds each on a VM host, in the rounds the tree first grows.
  const std::size_t widest = std::size_t(options_.max_nodes + 1) * s.model().params().n_vocab;
  if (out_.logits.capacity() < widest) {
    out_.logits.resize(widest);
    out_.logits.clear();
  }
  // Where the taps go, now that the backend is known: drafters that read them in backend memory
  // get them there where the host cannot read it (a GPU); where it can (the CPU), the host copy
  // serves them too, so no pass copies its taps twice.
  const bool device_apart = !s.model().backend().host_accessible(MemoryKind::device);
  hidden_on_device_ = wants_device_ && device_apart;
  hidden_on_host_ = wants_host_ || (wants_device_ && !device_apart);
  if (hidden_on_device_) {
    // Backend memory for the drafters that read their hidden states there, for this session's
    // batch size (a prompt piece's rows at most): allocated here, never in a round.
    backend_ = &s.model().backend();
    const std::uint64_t E = s.model().params().n_embd;
    std::uint64_t per_token = 0;
    for (std::size_t d = 0; d < drafters_.size(); ++d)
      if (in_backend_memory(d)) per_token = std::max<std::uint64_t>(per_token, tap_of_[d].size());
    const std::uint64_t rows_floats = std::uint64_t(std::max(s.max_batch(), options_.max_nodes + 1)) * per_token * E;
    if (!device_rows_ || device_rows_->size() < rows_floats * sizeof(float)) {
      device_rows_.reset();
      auto rows_buf = backend_->allocate(rows_floats * sizeof(float), MemoryKind::device);
      if (!rows_buf) return std::move(rows_buf).status();
      device_rows_ = std::move(*rows_buf);
    }
    if (!device_last_ || device_last_stride_ < per_token * E) {
      device_last_.reset();
      auto last = backend_->allocate(drafters_.size() * per_token * E * sizeof(float), MemoryKind::device);
      if (!last) return std::move(last).status();
      device_last_ = std::move(*last);
      device_last_stride_ = per_token * E;
    }
  }
  last_prompt_token_pending_ = false;
  prompt_.assign(prompt.begin(), prompt.end());
  prefill_at_ = keep;
  told_ = keep;
  return keep;
}

Status SpeculativeDecoder::prefill(Session& s, std::span<const TokenId> prompt) {
  if (auto kept = start(s, prompt, 0); !kept) return std::move(kept).status();
  while (prefilling()) {
    GRAFT_TRY(plan_prefill(s, s.max_batch()));
    const PlannedSequence one{this, &s};
    GRAFT_TRY(run_planned(s.workspace(), std::span(&one, 1), out_, parts_));
    GRAFT_TRY(finish_prefill(s, parts_[0]));
  }
  return Status::success();
}

Status SpeculativeDecoder::plan_prefill(Session& s, std::uint32_t max_rows) {
  planned_kind_ = Planned::none;
  if (!prefilling() || s.tokens().size() != prefill_at_)
    return Status(Errc::invalid_argument, "speculative prefill: the session is not where the prompt left it");
  // The prompt in pieces of at most max_rows rows, each handing its hidden states to the drafters.
  const auto n = static_cast<std::uint32_t>(
      std::min<std::size_t>({max_rows, s.max_batch(), prompt_.size() - prefill_at_}));
  if (n == 0) return Status(Errc::invalid_argument, "speculative prefill: no rows to plan");
  plan_n_past_ = static_cast<std::uint32_t>(prefill_at_);
  positions_.resize(n);
  std::iota(positions_.begin(), positions_.end(), static_cast<std::int32_t>(plan_n_past_));
  plan_logit_row_ = n - 1;
  planned_ = PlannedRows{};
  planned_.tokens = std::span<const TokenId>(prompt_).subspan(prefill_at_, n);
  planned_.positions = positions_;
  planned_.logit_rows = std::span(&plan_logit_row_, 1);
  planned_kind_ = Planned::prefill;
  return Status::success();
}

Status SpeculativeDecoder::finish_prefill(Session& s, const PassPart& part) {
  if (planned_kind_ != Planned::prefill) return Status(Errc::invalid_argument, "speculative prefill: no piece planned");
  planned_kind_ = Planned::none;
  const std::uint32_t E = s.model().params().n_embd, V = s.model().params().n_vocab;
  const auto n = static_cast<std::uint32_t>(planned_.tokens.size());
  const std::uint32_t n_past = plan_n_past_;
  all_rows_.resize(n);
  std::iota(all_rows_.begin(), all_rows_.end(), 0u);
  GRAFT_TRY(s.commit_rows(planned_.tokens, all_rows_,
                          std::span<const float>(part.out->logits).subspan(std::size_t(part.logit0) * V, V)));
  prefill_at_ += n;
  if (!prefilling()) {
    // All but the last token now (the drafters see it as pending); it follows at the first step.
    last_prompt_hidden_.resize(drafters_.size());
    const std::uint32_t last_row = n - 1;
    for (std::size_t d = 0; d < drafters_.size(); ++d) {
      const HiddenStates h = hidden_for(d, part, std::span(&last_row, 1), E);
      GRAFT_TRY(keep_last_prompt_row(d, h));
    }
    GRAFT_TRY(take_hidden_status());
    GRAFT_TRY(begin_drafters(prompt_, n_past, part, E));
    last_prompt_token_pending_ = true;
    told_ = static_cast<std::uint32_t>(prompt_.size() - 1);
    return Status::success();
  }
  // The next prompt token is this piece's pending one.
  GRAFT_TRY(begin_drafters(std::span<const TokenId>(prompt_).first(prefill_at_ + 1), n_past, part, E));
  told_ = static_cast<std::uint32_t>(prefill_at_);
  return Status::success();
}

Status SpeculativeDecoder::begin_drafters(std::span<const TokenId> context, std::uint32_t first, const PassPart& part,
                                        std::uint32_t n_embd) {
  CommitInfo info;
  info.context = context;
  info.n_committed = static_cast<std::uint32_t>(context.size() - 1);
  info.first = first;
  all_rows_.resize(info.n_committed - first);  // the part's first rows: the committed ones
  std::iota(all_rows_.begin(), all_rows_.end(), 0u);
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    info.hidden = hidden_for(d, part, all_rows_, n_embd);
    drafters_[d].begin(info);
  }
  return take_hidden_status();
}

Status SpeculativeDecoder::truncate(Session& s, std::uint32_t n) {
  planned_kind_ = Planned::none;
  // A cut before the first step takes the prompt's last token, whose hidden states wait for it.
  if (n < s.tokens().size()) last_prompt_token_pending_ = false;
  GRAFT_TRY(s.truncate(n));
  for (DrafterSlot& d : drafters_) d.truncate(n);
  told_ = std::min(told_, n);
  return Status::success();
}

Status SpeculativeDecoder::step(Session& s, Sampler& sampler, TokenId pending, std::uint32_t max_new,
                                std::vector<TokenId>& out) {
  GRAFT_TRY(plan_step(s, sampler, pending, max_new, s.max_batch()));
  const PlannedSequence one{this, &s};
  GRAFT_TRY(run_planned(s.workspace(), std::span(&one, 1), out_, parts_));
  return finish_step(s, sampler, parts_[0], out);
}

Status SpeculativeDecoder::plan_step(Session& s, Sampler& sampler, TokenId pending, std::uint32_t max_new,
                                     std::uint32_t max_rows) {
  planned_kind_ = Planned::none;
  if (prefilling()) return Status(Errc::invalid_argument, "speculative step: the prompt is not all in");
  if (max_new == 0 || max_rows == 0) return Status(Errc::invalid_argument, "speculative step: no room for a token");
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
      const bool on_device = in_backend_memory(d);
      info.hidden.memory = on_device ? MemoryKind::device : MemoryKind::host;
      info.hidden.data = tap_of_[d].empty() ? nullptr
                         : on_device ? static_cast<const float*>(device_last_->data()) + d * device_last_stride_
                                     : last_prompt_hidden_[d].data();
      drafters_[d].accept(info);
    }
    told_ = n_past;
  }

  // 1. Draft: the budget is what the round may verify and commit (max_new - 1 drafts at most:
  // the target's own token comes on top), the pass's rows and the KV slots left.
  TreeBudget budget;
  budget.max_depth = std::min(options_.max_depth, max_new - 1);
  const std::uint64_t slots = s.capacity() - n_past - 1;
  // (A hybrid model's state keeps the rows of trees up to its own size.)
  const std::uint32_t tree_rows = s.recurrent() ? s.recurrent()->max_pending() : s.max_batch();
  budget.max_nodes = static_cast<std::uint32_t>(
      std::min<std::uint64_t>({options_.max_nodes, std::min({max_rows, s.max_batch(), tree_rows}) - 1, slots}));
  if (budget.max_depth == 0) budget.max_nodes = 0;
  // The policy asks the drafters cheapest first, each only where it is expected to pay.
  policy_.begin_round(budget.max_nodes);
  std::fill(propose_took_.begin(), propose_took_.end(), 0.0);
  for (std::size_t d = 0; d < drafters_.size(); ++d) trees_[d].clear();
  for (std::size_t d : policy_.order()) {
    if (budget.max_nodes == 0) break;
    const std::uint32_t depth = policy_.draft_depth(d, budget.max_depth);
    if (depth == 0) {
      ++stats_.drafters[d].skipped;
      continue;
    }
    DraftRequest req;
    req.context = context_;
    req.max_nodes = budget.max_nodes;
    req.max_depth = depth;
    req.sampling = !sampler.greedy();
    const auto tp = Clock::now();
    drafters_[d].propose(req, trees_[d]);
    const double took = since(tp);
    propose_took_[d] = took;
    ++stats_.drafters[d].proposals;
    stats_.drafters[d].propose_seconds += took;
    policy_.proposed(d, depth, took, trees_[d]);
  }
  std::vector<const DraftTree*> proposals;
  for (const DraftTree& t : trees_) proposals.push_back(&t);
  std::function<float(std::size_t, std::uint32_t, float)> conditional;
  if (options_.adaptive)
    conditional = [this](std::size_t d, std::uint32_t depth, float q) { return policy_.conditional(d, depth, q); };
  // One merge; the policy keeps the best n nodes that maximise expected tokens per second.
  tree_.build(proposals, budget, n_vocab, conditional);
  tree_.cut(policy_.verify_count(tree_.scores_best_first()));
  plan_host_seconds_ = since(t0) - std::accumulate(propose_took_.begin(), propose_took_.end(), 0.0);
  stats_.draft_seconds += since(t0);

  // 2. Verify: [pending, nodes...] in one pass (the caller's, maybe shared with other
  // sequences), every row's logits and the drafters' taps.
  tree_.verify_tokens(pending, verify_tokens_);
  const auto n_rows = static_cast<std::uint32_t>(verify_tokens_.size());
  tree_.verify_positions(n_past, positions_);
  if (!tree_.empty()) tree_.ancestor_mask(mask_);
  all_rows_.resize(n_rows);
  std::iota(all_rows_.begin(), all_rows_.end(), 0u);
  // Greedy with nothing added to the logits needs each row's argmax alone, and a chain that keeps
  // at most its top_k tokens those candidates alone: the backend picks them and hands back one id,
  // or k ids and logits, per row (on a GPU, not n_rows x n_vocab floats).
  walk_k_ = candidates_for(sampler, s.model());
  walk_ = sampler.plain_argmax() ? Walk::argmax : walk_k_ ? Walk::candidates : Walk::logits;
  planned_ = PlannedRows{};
  planned_.tokens = verify_tokens_;
  planned_.positions = positions_;
  planned_.ancestor = tree_.empty() ? nullptr : mask_.data();
  if (walk_ == Walk::argmax) {
    planned_.argmax_rows = all_rows_;
  } else if (walk_ == Walk::candidates) {
    planned_.candidate_rows = all_rows_;
    planned_.candidates = walk_k_;
  } else {
    planned_.logit_rows = all_rows_;
  }
  plan_n_past_ = n_past;
  plan_pending_ = pending;
  planned_kind_ = Planned::step;
  return Status::success();
}

Status SpeculativeDecoder::finish_step(Session& s, Sampler& sampler, const PassPart& part, std::vector<TokenId>& out) {
  if (planned_kind_ != Planned::step) return Status(Errc::invalid_argument, "speculative step: no round planned");
  planned_kind_ = Planned::none;
  const Model& model = s.model();
  const std::uint32_t n_vocab = model.params().n_vocab, E = model.params().n_embd;
  const std::uint32_t n_past = plan_n_past_;
  const TokenId pending = plan_pending_;
  const auto n_rows = static_cast<std::uint32_t>(verify_tokens_.size());
  const ForwardOutput& o = *part.out;
  bool short_of_rows = false;
  switch (walk_) {
    case Walk::logits:
      short_of_rows = o.logits.size() < (std::size_t(part.logit0) + n_rows) * n_vocab;
      break;
    case Walk::argmax:
      short_of_rows = o.argmax.size() < std::size_t(part.argmax0) + n_rows;
      break;
    case Walk::candidates:
      short_of_rows = part.candidate_stride < walk_k_ ||
                      o.candidate_ids.size() < (std::size_t(part.candidate0) + n_rows) * part.candidate_stride;
      break;
  }
  if (short_of_rows)
    return Status(Errc::internal, "speculative step: the pass has fewer output rows than the round planned");
  const std::span<const float> logits =
      walk_ != Walk::logits
          ? std::span<const float>()
          : std::span<const float>(o.logits).subspan(std::size_t(part.logit0) * n_vocab, std::size_t(n_rows) * n_vocab);
  const double verify_seconds = part.seconds;
  stats_.verify_seconds += verify_seconds;
  policy_.verified(n_rows, verify_seconds);

  // 3. Accept: the walk draws the target's tokens as plain decoding would (greedy: reads the ids;
  // a top_k chain: reads the candidates).
  auto t0 = Clock::now();
  WalkResult walk;
  if (walk_ == Walk::argmax) {
    walk = walk_tree_argmax(tree_, std::span<const TokenId>(o.argmax).subspan(part.argmax0, n_rows), context_);
  } else if (walk_ == Walk::candidates) {
    const std::size_t first = std::size_t(part.candidate0) * part.candidate_stride,
                      count = std::size_t(n_rows) * part.candidate_stride;
    walk = walk_tree_candidates(tree_, std::span<const TokenId>(o.candidate_ids).subspan(first, count),
                                std::span<const float>(o.candidate_logits).subspan(first, count), part.candidate_stride,
                                walk_k_, sampler, context_);
  } else {
    walk = walk_tree(tree_, logits, n_vocab, sampler, context_);
  }
  const double walk_seconds = since(t0);
  stats_.accept_seconds += walk_seconds;

  // 4. Roll back: the KV cache keeps the pending token and the path; the drafters learn them.
  t0 = Clock::now();
  std::vector<std::uint32_t> kept{0};
  std::vector<TokenId> committed{pending};
  for (std::int32_t node : walk.path) {
    kept.push_back(static_cast<std::uint32_t>(node) + 1);
    committed.push_back(tree_.token(static_cast<std::size_t>(node)));
  }
  // The session's logits: the last kept row's (none after a walk that read ids or candidates only).
  const auto last_row =
      walk_ != Walk::logits ? std::span<const float>() : logits.subspan(std::size_t(kept.back()) * n_vocab, n_vocab);
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
    info.hidden = hidden_for(d, part, kept, E);
    const auto ta = Clock::now();
    drafters_[d].accept(info);
    accept_took_[d] = since(ta);
  }
  told_ = info.n_committed;
  GRAFT_TRY(take_hidden_status());
  const double rollback_seconds = since(t0);
  stats_.rollback_seconds += rollback_seconds;

  // 5. Metrics, and the policy learns.
  t0 = Clock::now();
  ++stats_.rounds;
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
  std::vector<const DraftTree*> proposals;
  for (const DraftTree& t : trees_) proposals.push_back(&t);
  committed.push_back(walk.next);  // the continuation the target verified: path, then its token
  // The host's work this round: the merge and the choices, the walk, metrics and learning (the
  // policy gets it without the learning's own time, which it cannot time itself).
  const double host = plan_host_seconds_ + walk_seconds + since(t0);
  const auto t_learn = Clock::now();
  policy_.learn(proposals, std::span<const TokenId>(committed).subspan(1), own_nodes, host, rollback_seconds);
  committed.pop_back();
  stats_.host_seconds += host + since(t_learn);
  if (trace_) {
    nlohmann::json asked = nlohmann::json::object();
    const auto alone = policy_.accepted_lengths();
    for (std::size_t d = 0; d < drafters_.size(); ++d)
      if (policy_.asked(d))
        asked[drafters_[d].name()] = {{"bucket", policy_.asked_bucket(d)}, {"nodes", trees_[d].size()},
                                      {"propose_us", 1e6 * propose_took_[d]}, {"alone", d < alone.size() ? alone[d] : 0},
                                      {"own_verified", own_nodes[d]}};
    nlohmann::json accept_us = nlohmann::json::object();
    for (std::size_t d = 0; d < drafters_.size(); ++d) accept_us[drafters_[d].name()] = 1e6 * accept_took_[d];
    const nlohmann::json line = {{"round", stats_.rounds}, {"asked", asked}, {"verified", tree_.size()},
                                 {"accepted", walk.path.size()}, {"verify_us", 1e6 * verify_seconds},
                                 {"host_us", 1e6 * host}, {"rollback_us", 1e6 * rollback_seconds},
                                 {"accept_us", accept_us}};
    std::fprintf(trace_, "%s\n", line.dump().c_str());
  }
  stats_.estimated_speedup = policy_.estimated_speedup();
  const double step = policy_.verify_seconds(1);
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    DrafterStats& ds = stats_.drafters[d];
    const std::uint32_t depth = policy_.last_depth(d);
    ds.propose_steps = step > 0 && depth > 0 ? policy_.propose_seconds(d, depth) / step : 0.0;
    ds.gain.resize(RoundPolicy::kBuckets);
    for (int b = 0; b < RoundPolicy::kBuckets; ++b) ds.gain[static_cast<std::size_t>(b)] = policy_.gain(d, b);
  }

  out.insert(out.end(), committed.begin() + 1, committed.end());
  out.push_back(walk.next);
  return Status::success();
}

}  // namespace graft
