#include "server/generation_queue.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "tokenizer/tokenizer.hpp"

namespace graft::server {

Status shutting_down() { return Status(Errc::unsupported, "the server is shutting down"); }

namespace {
double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }
std::size_t shared_prefix(std::span<const TokenId> a, std::span<const TokenId> b) {
  return static_cast<std::size_t>(std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin());
}
}  // namespace

namespace {

// The sequences' decoders together, as /metrics shows them (the drafters in the same order in each).
SpeculativeStats sum(const std::vector<std::unique_ptr<SpeculativeDecoder>>& all) {
  SpeculativeStats t;
  for (const auto& decoder : all) {
    const SpeculativeStats& s = decoder->stats();
    t.rounds += s.rounds;
    t.drafted += s.drafted;
    t.accepted += s.accepted;
    t.emitted += s.emitted;
    if (t.drafters.size() < s.drafters.size()) t.drafters.resize(s.drafters.size());
    for (std::size_t d = 0; d < s.drafters.size(); ++d) {
      DrafterStats& o = t.drafters[d];
      const DrafterStats& x = s.drafters[d];
      o.name = x.name;
      o.rounds += x.rounds;
      o.proposed += x.proposed;
      o.accepted += x.accepted;
      o.failures += x.failures;
      o.skipped += x.skipped;
      o.accepted_share += x.accepted_share;
      o.seconds += x.seconds;
    }
  }
  return t;
}

}  // namespace

GenerationQueue::GenerationQueue(Pipeline& pipeline, std::vector<std::unique_ptr<Session>> sessions,
                                 std::vector<std::unique_ptr<SpeculativeDecoder>> decoders, ServerMetrics& metrics,
                                 double context_shift_at, std::uint32_t context_keep)
    : pipeline_(pipeline),
      decoders_(std::move(decoders)),
      metrics_(metrics),
      context_shift_at_(context_shift_at),
      context_keep_(context_keep) {
  for (auto& s : sessions) {
    Slot slot;
    slot.session = std::move(s);
    slots_.push_back(std::move(slot));
  }
  kv_used_.assign(slots_.size(), 0);
  kv_committed_.assign(slots_.size(), 0);
  update_kv_metric(0);
  worker_ = std::thread([this] { run(); });
}

GenerationQueue::~GenerationQueue() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
    for (auto& job : waiting_) job->finish(shutting_down(), {}, 0);
    waiting_.clear();
  }
  cv_.notify_all();
  worker_.join();
  // The opt-in policy file keeps the slot that learnt from the most rounds.
  if (const SpeculativeDecoder* most = most_experienced())
    if (Status saved = most->save_policy(); !saved.ok()) spdlog::warn("{}", saved.message());
}

void GenerationQueue::submit(std::shared_ptr<GenerationJob> job) {
  {
    std::lock_guard lock(m_);
    if (stopping_) {
      job->finish(shutting_down(), {}, 0);
      return;
    }
    waiting_.push_back(std::move(job));
  }
  cv_.notify_one();
}

const SpeculativeDecoder* GenerationQueue::most_experienced() const {
  const SpeculativeDecoder* most = nullptr;
  for (const auto& d : decoders_)
    if (d && (!most || d->policy().learnt_rounds() > most->policy().learnt_rounds())) most = d.get();
  return most;
}

nlohmann::json GenerationQueue::memory() const {
  std::uint64_t kv_device = 0, kv_host = 0, workspaces = 0, state = 0;
  std::vector<const Workspace*> seen;
  for (const Slot& slot : slots_) {
    const KvMemory m = slot.session->kv().memory();
    kv_device += m.device_bytes;
    kv_host += m.host_bytes;
    state += slot.session->state_bytes();
    const Workspace* ws = &slot.session->workspace();
    if (std::find(seen.begin(), seen.end(), ws) == seen.end()) seen.push_back(ws), workspaces += ws->bytes();
  }
  return {{"kv_device_bytes", kv_device}, {"kv_host_bytes", kv_host}, {"recurrent_state_bytes", state},
          {"workspace_bytes", workspaces},
          {"workspaces", seen.size()}};
}

std::size_t GenerationQueue::depth() const {
  std::lock_guard lock(m_);
  return waiting_.size();
}

std::size_t GenerationQueue::running() const {
  std::lock_guard lock(m_);
  return active_;
}

void GenerationQueue::update_kv_metric(std::size_t i) {
  // What the KV store holds (a round's rejected rows it still held would show here), beside what
  // the sequence has committed.
  kv_used_[i] = slots_[i].session->kv().size();
  kv_committed_[i] = static_cast<std::uint32_t>(slots_[i].session->tokens().size());
  std::uint32_t used = 0, committed = 0, capacity = 0;
  for (std::size_t k = 0; k < slots_.size(); ++k) {
    used += kv_used_[k];
    committed += kv_committed_[k];
    capacity += slots_[k].session->capacity();
  }
  metrics_.kv(used, committed, capacity);
}

bool GenerationQueue::admit() {
  std::unique_lock lock(m_);
  cv_.wait(lock, [&] { return stopping_ || active_ > 0 || !waiting_.empty(); });
  if (stopping_) return false;
  while (!waiting_.empty() && active_ < slots_.size()) {
    std::shared_ptr<GenerationJob> job = std::move(waiting_.front());
    waiting_.pop_front();
    // A job whose client went away before it started finishes at once (nobody reads its result).
    if (job->cancelled) {
      job->finish(Status::success(), {}, 0);
      continue;
    }
    // The free sequence whose tokens share the longest prefix with the prompt: the agent-loop case
    // (the same long system prompt, or the whole conversation so far, every turn).
    Slot* best = nullptr;
    std::size_t best_shared = 0;
    for (Slot& slot : slots_) {
      if (slot.job) continue;
      const std::size_t shared = shared_prefix(slot.session->tokens(), job->prompt);
      if (!best || shared > best_shared) best = &slot, best_shared = shared;
    }
    best->job = std::move(job);
    ++active_;
  }
  return true;
}

void GenerationQueue::run() {
  while (admit()) decoders_.empty() ? step() : step_speculative();
  // Stopping: the jobs still running end with what they have.
  for (Slot& slot : slots_)
    if (slot.job) finish(slot, shutting_down());
}

void GenerationQueue::finish(Slot& slot, Status st) {
  GenerationJob& job = *slot.job;
  if (slot.text) job.push(slot.text->finish(), false);  // the text held back for stop strings
  if (slot.thinking) {
    std::lock_guard lock(job.m);
    job.reasoning_tokens = slot.thinking->reasoning_tokens();
    job.thinking_closed = slot.thinking->forced();
  }
  if (slot.stats.generated_tokens > 1) slot.stats.decode_seconds = seconds(Clock::now() - slot.decoding);
  if (st.ok()) metrics_.generation(slot.stats, job.cached_tokens);
  double tokens_per_round = 0;
  if (!decoders_.empty()) {
    const SpeculativeStats& now = decoders_[index_of(slot)]->stats();
    if (now.rounds > slot.rounds0) tokens_per_round = double(now.emitted - slot.emitted0) / double(now.rounds - slot.rounds0);
    metrics_.speculative(sum(decoders_));
  }
  job.finish(std::move(st), slot.stats, tokens_per_round);
  slot.job.reset();
  slot.sampler.reset();
  slot.text.reset();
  slot.thinking.reset();
  update_kv_metric(index_of(slot));
  std::lock_guard lock(m_);
  --active_;
}

std::uint32_t GenerationQueue::shift_threshold() const {
  if (context_shift_at_ <= 0) return 0;
  // Of the real capacity; at most capacity - 1, so a shift always comes before a full context.
  const std::uint32_t capacity = slots_.front().session->capacity();
  return std::min(capacity - 1, static_cast<std::uint32_t>(std::ceil(context_shift_at_ * capacity)));
}

std::vector<TokenId> GenerationQueue::kept_by_shift(Slot& slot) {
  // The first context_keep tokens and the newer half of the rest; they go in again (exact KV at
  // their new positions, no RoPE re-rotation needed).
  const std::span<const TokenId> t = slot.session->tokens();
  const std::size_t keep = std::min<std::size_t>(context_keep_, t.size());
  const std::size_t drop = (t.size() - keep) / 2;
  slot.job->shifted_at.push_back(static_cast<std::uint32_t>(t.size() + 1));  // the pending token included
  metrics_.context_shift();
  std::vector<TokenId> kept(t.begin(), t.begin() + keep);
  kept.insert(kept.end(), t.begin() + keep + drop, t.end());
  return kept;
}

Status GenerationQueue::shift(Slot& slot) {
  // Plain decoding prefills the kept tokens again; the pending token follows as usual.
  slot.refill = kept_by_shift(slot);
  slot.refill_at = 0;
  return slot.session->reset();
}

void GenerationQueue::start_admitted() {
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (!slot.job) continue;
    if (slot.job->cancelled) {  // its client went away
      finish(slot, Status::success());
      continue;
    }
    if (slot.sampler) continue;  // started before
    // Keep the KV of the prompt's prefix this sequence already holds (at least the last prompt
    // token is run again: its logits give the first token); with drafters, as far as they hold it too.
    if (!decoders_.empty()) {
      // What the slots learnt is shared between requests: a fresh slot starts from the most
      // experienced one's policy instead of learning the drafters' worth again.
      const SpeculativeDecoder* most = most_experienced();
      if (decoders_[i]->adopt_policy(*most))
        spdlog::debug("sequence {}: speculative policy taken over from another sequence ({} rounds learnt)", i,
                      most->policy().learnt_rounds());
      slot.rounds0 = decoders_[i]->stats().rounds;
      slot.emitted0 = decoders_[i]->stats().emitted;
      slot.shifting = false;
      auto kept = decoders_[i]->start(*slot.session, slot.job->prompt, std::numeric_limits<std::uint32_t>::max());
      if (!kept) {
        finish(slot, std::move(kept).status());
        continue;
      }
      start_job(slot, *kept);
      continue;
    }
    const std::size_t keep =
        std::min(shared_prefix(slot.session->tokens(), slot.job->prompt), slot.job->prompt.size() - 1);
    if (Status st = slot.session->truncate(static_cast<std::uint32_t>(keep)); !st.ok()) {
      finish(slot, st);
      continue;
    }
    start_job(slot, static_cast<std::uint32_t>(keep));
  }
}

void GenerationQueue::step() {
  start_admitted();
  // The pass: every decoding slot's pending token first, then prompt pieces in what is left of
  // max_batch rows.
  const std::uint32_t budget = pipeline_.max_batch();
  std::vector<SessionStep> steps;
  std::vector<Slot*> stepped;
  // Greedy slots with nothing added to the logits read the backend's id, and top_k chains its best
  // candidates, not a row of logits.
  std::vector<TokenId> greedy(slots_.size());
  std::uint32_t rows = 0;
  const std::uint32_t threshold = shift_threshold();
  for (Slot& slot : slots_) {
    if (!slot.job || slot.prompt_at < slot.job->prompt.size()) continue;
    // A decoding sequence about to reach the threshold shifts first (never earlier: the test is
    // on its real length, the pending token included).
    if (threshold && slot.refill.empty() && slot.session->tokens().size() + 1 >= threshold) {
      if (Status st = shift(slot); !st.ok()) {
        finish(slot, st);
        continue;
      }
    }
    if (!slot.refill.empty()) continue;
    const bool argmax = slot.sampler->plain_argmax();
    steps.push_back(SessionStep{slot.session.get(), std::span<const TokenId>(&slot.pending, 1),
                                argmax ? &greedy[index_of(slot)] : nullptr,
                                argmax ? 0 : candidates_for(*slot.sampler, slot.session->model())});
    stepped.push_back(&slot);
    ++rows;
  }
  for (Slot& slot : slots_) {
    if (!slot.job || rows >= budget) continue;
    // Prompt pieces, or after a shift the kept tokens.
    const bool refilling = !slot.refill.empty();
    if (!refilling && slot.prompt_at == slot.job->prompt.size()) continue;
    const std::vector<TokenId>& src = refilling ? slot.refill : slot.job->prompt;
    const std::size_t at = refilling ? slot.refill_at : slot.prompt_at;
    const std::size_t n = std::min<std::size_t>(budget - rows, src.size() - at);
    steps.push_back(SessionStep{slot.session.get(), std::span<const TokenId>(src).subspan(at, n)});
    stepped.push_back(&slot);
    rows += static_cast<std::uint32_t>(n);
  }
  if (steps.empty()) return;
  if (Status st = Session::append_together(slots_.front().session->workspace(), steps); !st.ok()) {
    for (Slot* slot : stepped) finish(*slot, st);
    return;
  }
  metrics_.forward_pass(rows, static_cast<std::uint32_t>(steps.size()));
  for (std::size_t i = 0; i < stepped.size(); ++i) {
    Slot& slot = *stepped[i];
    GenerationJob& job = *slot.job;
    if (!slot.refill.empty()) {
      // Rebuilding after a shift: the pending token is already sampled; it goes in once all the
      // kept tokens are back.
      slot.refill_at += steps[i].tokens.size();
      if (slot.refill_at == slot.refill.size()) slot.refill.clear();
      continue;
    }
    const bool prefilling = slot.prompt_at < job.prompt.size();
    if (prefilling) {
      slot.prompt_at += steps[i].tokens.size();
      if (slot.prompt_at < job.prompt.size()) continue;  // more prompt pieces to come
      slot.stats.prefill_seconds = seconds(Clock::now() - slot.started);
      slot.decoding = Clock::now();
    }
    if (prompt_only(job.options.max_tokens, slot.stats)) {
      finish(slot, Status::success());
      continue;
    }
    const Session& s = *slot.session;
    TokenId next;
    if (steps[i].argmax)
      next = *steps[i].argmax;
    else if (steps[i].candidates)
      next = slot.sampler->sample_candidates(s.candidate_ids(), s.candidate_logits());
    else
      next = slot.sampler->sample(s.logits(), s.tokens());
    take(slot, thought(slot, next));
  }
}

void GenerationQueue::start_job(Slot& slot, std::uint32_t kept) {
  {
    std::lock_guard lock(slot.job->m);
    slot.job->cached_tokens = kept;
    slot.job->started = true;
  }
  slot.sampler.emplace(slot.job->options.sampling);
  slot.text.emplace(pipeline_.tokenizer(), slot.job->options.stop, slot.job->shown_tokens);
  if (slot.job->thinking) slot.thinking.emplace(*slot.job->thinking, opens_thinking(slot.job->prompt, *slot.job->thinking));
  slot.stats = GenerationStats{};
  slot.stats.prompt_tokens = static_cast<std::uint32_t>(slot.job->prompt.size());
  slot.prompt_at = kept;
  slot.refill.clear();
  slot.started = Clock::now();
}

TokenId GenerationQueue::thought(Slot& slot, TokenId sampled) {
  return slot.thinking ? slot.thinking->next(sampled, pipeline_.tokenizer().is_eog(sampled)) : sampled;
}

bool GenerationQueue::take(Slot& slot, TokenId id, bool last) {
  // As Session::generate: emit, and stop when the emitted token ends it or (after a step's last
  // token) no slot is left for the next.
  const Tokenizer& tok = pipeline_.tokenizer();
  GenerationJob& job = *slot.job;
  const bool go_on = emit_token(id, tok, *slot.text, job.options.max_tokens,
                                [&](TokenId, std::string_view text) { return job.token(text); }, slot.stats);
  const bool full = last && slot.session->room() == 0 && !shift_threshold();  // with shifting it shifts instead
  if (go_on && full) slot.stats.stop = FinishReason::context_full;
  if (!go_on || full) {
    finish(slot, Status::success());
    return false;
  }
  slot.pending = id;
  return true;
}

Status GenerationQueue::shift_speculative(std::size_t i) {
  // The pending token goes in again with the kept tokens: the decoder prefills them as a new
  // prompt (the drafters start afresh on it) and the next token is sampled from its logits.
  Slot& slot = slots_[i];
  std::vector<TokenId> again = kept_by_shift(slot);
  again.push_back(slot.pending);
  if (auto kept = decoders_[i]->start(*slot.session, again, 0); !kept) return std::move(kept).status();
  slot.shifting = true;
  return Status::success();
}

void GenerationQueue::step_speculative() {
  start_admitted();
  // The pass: a round for every decoding sequence (one row each kept for those after it), then
  // prompt pieces in what is left of max_batch rows.
  const std::uint32_t budget = pipeline_.max_batch();
  const std::uint32_t threshold = shift_threshold();
  std::vector<PlannedSequence> planned;
  std::vector<std::size_t> who;
  std::vector<char> prefill;
  std::uint32_t rows = 0;
  const auto decoding = [&](std::size_t i) { return slots_[i].job && !decoders_[i]->prefilling(); };
  std::size_t decoding_left = 0, prefilling = 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    decoding_left += decoding(i) ? 1 : 0;
    prefilling += slots_[i].job && decoders_[i]->prefilling() ? 1 : 0;
  }
  // While a prompt waits, the rounds leave it a quarter of the rows (many sequences' drafted
  // trees could take them all); the --parallel limit (at most max_batch) leaves every decoding
  // sequence its pending token's row.
  const std::uint32_t reserve = prefilling ? budget / 4 : 0;
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!decoding(i)) continue;
    Slot& slot = slots_[i];
    Session& s = *slot.session;
    --decoding_left;
    // A sequence about to reach the threshold shifts first (never earlier; its rounds are cut to
    // land on it exactly, so never later either).
    if (threshold && s.tokens().size() + 1 >= threshold) {
      if (Status st = shift_speculative(i); !st.ok()) finish(slot, st);
      continue;
    }
    // As Session::generate, and not past a context shift or a forced end of thinking (it replaces
    // the round's last token then, never a committed one).
    std::uint64_t max_new = max_new_tokens(s.room(), slot.job->options.max_tokens, slot.stats);
    if (threshold) max_new = std::min<std::uint64_t>(max_new, threshold - (s.tokens().size() + 1));
    if (slot.thinking && slot.thinking->unforced() >= 0)
      max_new = std::min<std::uint64_t>(max_new, slot.thinking->unforced() + 1);
    const std::int64_t left = std::int64_t(budget) - rows - std::int64_t(decoding_left) - reserve;
    const auto max_rows = static_cast<std::uint32_t>(std::max<std::int64_t>(1, left));
    if (Status st = decoders_[i]->plan_step(s, *slot.sampler, slot.pending, static_cast<std::uint32_t>(max_new), max_rows);
        !st.ok()) {
      finish(slot, st);
      continue;
    }
    planned.push_back(PlannedSequence{decoders_[i].get(), &s});
    who.push_back(i);
    prefill.push_back(0);
    rows += static_cast<std::uint32_t>(decoders_[i]->planned().tokens.size());
  }
  for (std::size_t i = 0; i < slots_.size() && rows < budget; ++i) {
    Slot& slot = slots_[i];
    if (!slot.job || !decoders_[i]->prefilling()) continue;
    if (Status st = decoders_[i]->plan_prefill(*slot.session, budget - rows); !st.ok()) {
      finish(slot, st);
      continue;
    }
    planned.push_back(PlannedSequence{decoders_[i].get(), slot.session.get()});
    who.push_back(i);
    prefill.push_back(1);
    rows += static_cast<std::uint32_t>(decoders_[i]->planned().tokens.size());
  }
  if (planned.empty()) return;
  if (Status st = run_planned(slots_.front().session->workspace(), planned, pass_, parts_); !st.ok()) {
    for (std::size_t i : who) finish(slots_[i], st);
    return;
  }
  metrics_.forward_pass(rows, static_cast<std::uint32_t>(planned.size()));
  std::vector<TokenId> out;
  for (std::size_t k = 0; k < who.size(); ++k) {
    Slot& slot = slots_[who[k]];
    SpeculativeDecoder& decoder = *decoders_[who[k]];
    Session& s = *slot.session;
    if (prefill[k]) {
      if (Status st = decoder.finish_prefill(s, parts_[k]); !st.ok()) {
        finish(slot, st);
        continue;
      }
      if (decoder.prefilling()) continue;  // more prompt pieces to come
      if (slot.shifting) {
        slot.shifting = false;  // the pending token is in: the next one follows
      } else {
        slot.stats.prefill_seconds = seconds(Clock::now() - slot.started);
        slot.decoding = Clock::now();
        if (prompt_only(slot.job->options.max_tokens, slot.stats)) {
          finish(slot, Status::success());
          continue;
        }
      }
      take(slot, thought(slot, slot.sampler->sample(s.logits(), s.tokens())));
      continue;
    }
    out.clear();
    if (Status st = decoder.finish_step(s, *slot.sampler, parts_[k], out); !st.ok()) {
      finish(slot, st);
      continue;
    }
    // The round's tokens: all but the last committed after the pending one.
    const std::size_t first = s.tokens().size() - (out.size() - 1);
    for (std::size_t j = 0; j < out.size(); ++j) {
      const TokenId id = thought(slot, out[j]);
      bool last = j + 1 == out.size();
      if (id != out[j]) {
        // A forced token (an end of thinking, a tool call's start) replaced a sampled one: the
        // sequence goes back to just before it (a committed one; the last is only pending, but the
        // drafters were told it: their view is cut too), and the forced one is pending instead.
        if (Status st = decoder.truncate(s, static_cast<std::uint32_t>(first + j)); !st.ok()) {
          finish(slot, st);
          break;
        }
        last = true;
      }
      if (!take(slot, id, last) || last) break;
    }
  }
  metrics_.speculative(sum(decoders_));  // live: rounds and acceptance while answers run
}

}  // namespace graft::server
