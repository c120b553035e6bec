#include "server/generation_queue.hpp"

#include <algorithm>
#include <cmath>

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

// A decoder whose prefill and steps hold `m`: sequences on their own threads take turns, each
// step whole (the drafters' and the target's passes share the model's backend and workspace).
class LockedDecoder final : public TokenDecoder {
 public:
  LockedDecoder(TokenDecoder& inner, std::mutex& m) : inner_(inner), m_(m) {}
  Status prefill(Session& session, std::span<const TokenId> prompt) override {
    std::lock_guard lock(m_);
    return inner_.prefill(session, prompt);
  }
  Status step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t max_new,
              std::vector<TokenId>& out) override {
    std::lock_guard lock(m_);
    return inner_.step(session, sampler, pending, max_new, out);
  }

 private:
  TokenDecoder& inner_;
  std::mutex& m_;
};

// The sequences' decoders together, as /metrics shows them (the drafters in the same order in each).
SpeculativeStats sum(const std::vector<SpeculativeStats>& all) {
  SpeculativeStats t;
  for (const SpeculativeStats& s : all) {
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
  spec_stats_.resize(decoders_.size());
  update_kv_metric(0);
  if (decoders_.empty()) {
    workers_.emplace_back([this] { run(); });
  } else {
    for (std::size_t i = 0; i < slots_.size(); ++i) workers_.emplace_back([this, i] { run_speculative_slot(i); });
  }
}

GenerationQueue::~GenerationQueue() {
  {
    std::lock_guard lock(m_);
    stopping_ = true;
    for (auto& job : waiting_) job->finish(shutting_down(), {}, 0);
    waiting_.clear();
  }
  cv_.notify_all();
  for (std::thread& t : workers_) t.join();
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

std::size_t GenerationQueue::depth() const {
  std::lock_guard lock(m_);
  return waiting_.size();
}

std::size_t GenerationQueue::running() const {
  std::lock_guard lock(m_);
  return active_;
}

void GenerationQueue::update_kv_metric(std::size_t i) {
  const auto own = static_cast<std::uint32_t>(slots_[i].session->tokens().size());
  std::lock_guard lock(tally_m_);
  kv_used_[i] = own;
  std::uint32_t used = 0, capacity = 0;
  for (std::size_t k = 0; k < slots_.size(); ++k) {
    used += kv_used_[k];
    capacity += slots_[k].session->capacity();
  }
  metrics_.kv(used, capacity);
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

void GenerationQueue::run_speculative_slot(std::size_t i) {
  for (;;) {
    std::shared_ptr<GenerationJob> job;
    {
      std::unique_lock lock(m_);
      cv_.wait(lock, [&] { return stopping_ || !waiting_.empty(); });
      if (stopping_) return;
      job = std::move(waiting_.front());
      waiting_.pop_front();
      // A job whose client went away before it started finishes at once (nobody reads its result).
      if (job->cancelled) {
        job->finish(Status::success(), {}, 0);
        continue;
      }
      ++active_;
    }
    run_speculative(i, *job);
    std::lock_guard lock(m_);
    --active_;
  }
}

void GenerationQueue::run() {
  while (admit()) step();
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
  job.finish(std::move(st), slot.stats, 0);
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

void GenerationQueue::shift(Slot& slot) {
  // Keep the first context_keep tokens and the newer half of the rest; the KV is rebuilt by
  // prefilling them again (exact KV at their new positions, no RoPE re-rotation needed).
  const std::span<const TokenId> t = slot.session->tokens();
  const std::size_t keep = std::min<std::size_t>(context_keep_, t.size());
  const std::size_t drop = (t.size() - keep) / 2;
  slot.job->shifted_at.push_back(static_cast<std::uint32_t>(t.size() + 1));  // the pending token included
  slot.refill.assign(t.begin(), t.begin() + keep);
  slot.refill.insert(slot.refill.end(), t.begin() + keep + drop, t.end());
  slot.refill_at = 0;
  (void)slot.session->reset();
  metrics_.context_shift();
}

void GenerationQueue::step() {
  const Tokenizer& tok = pipeline_.tokenizer();
  // Start the admitted jobs; drop those whose client went away.
  for (Slot& slot : slots_) {
    if (!slot.job) continue;
    if (slot.job->cancelled) {
      finish(slot, Status::success());
      continue;
    }
    if (slot.sampler) continue;
    // Keep the KV of the prompt's prefix this sequence already holds (at least the last prompt
    // token is run again: its logits give the first token).
    const std::size_t keep =
        std::min(shared_prefix(slot.session->tokens(), slot.job->prompt), slot.job->prompt.size() - 1);
    if (Status st = slot.session->truncate(static_cast<std::uint32_t>(keep)); !st.ok()) {
      finish(slot, st);
      continue;
    }
    slot.job->cached_tokens = static_cast<std::uint32_t>(keep);
    slot.sampler.emplace(slot.job->options.sampling);
    slot.text.emplace(tok, slot.job->options.stop);
    if (slot.job->thinking) slot.thinking.emplace(*slot.job->thinking, opens_thinking(slot.job->prompt, *slot.job->thinking));
    slot.stats = GenerationStats{};
    slot.stats.prompt_tokens = static_cast<std::uint32_t>(slot.job->prompt.size());
    slot.prompt_at = keep;
    slot.refill.clear();
    slot.started = Clock::now();
  }
  // The pass: every decoding slot's pending token first, then prompt pieces in what is left of
  // max_batch rows.
  const std::uint32_t budget = pipeline_.max_batch();
  std::vector<SessionStep> steps;
  std::vector<Slot*> stepped;
  std::uint32_t rows = 0;
  const std::uint32_t threshold = shift_threshold();
  for (Slot& slot : slots_) {
    if (!slot.job || slot.prompt_at < slot.job->prompt.size()) continue;
    // A decoding sequence about to reach the threshold shifts first (never earlier: the test is
    // on its real length, the pending token included).
    if (threshold && slot.refill.empty() && slot.session->tokens().size() + 1 >= threshold) shift(slot);
    if (!slot.refill.empty()) continue;
    steps.push_back(SessionStep{slot.session.get(), std::span<const TokenId>(&slot.pending, 1)});
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
    if (job.options.max_tokens == 0) {  // as Session::generate: the prompt only
      slot.stats.stop = FinishReason::length;
      finish(slot, Status::success());
      continue;
    }
    // As Session::generate: sample from the last token's logits over the history, emit, and stop
    // when the emitted token ends it or no slot is left for the next.
    TokenId id = slot.sampler->sample(slot.session->logits(), slot.session->tokens());
    if (slot.thinking) id = slot.thinking->next(id, tok.is_eog(id));  // a forced end of thinking replaces it
    const bool go_on = emit_token(id, tok, *slot.text, job.options.max_tokens,
                                  [&](TokenId, std::string_view text) { return job.token(text); }, slot.stats);
    const bool full = slot.session->room() == 0 && !threshold;  // with shifting it shifts instead
    if (go_on && full) slot.stats.stop = FinishReason::context_full;
    if (!go_on || full) {
      finish(slot, Status::success());
      continue;
    }
    slot.pending = id;
  }
}

void GenerationQueue::run_speculative(std::size_t i, GenerationJob& job) {
  Session& session = *slots_[i].session;
  SpeculativeDecoder& decoder = *decoders_[i];
  LockedDecoder locked(decoder, step_m_);
  const Tokenizer& tok = pipeline_.tokenizer();
  const SpeculativeStats before = decoder.stats();
  std::optional<ThinkingControl> thinking;
  if (job.thinking) thinking.emplace(*job.thinking, opens_thinking(job.prompt, *job.thinking));
  // A forced end of thinking cannot be handed to the decoder in the middle of its step: the
  // generation stops before it, and starts again over the sequence so far plus the close (one
  // more prefill for each forced close).
  std::vector<TokenId> sequence = job.prompt;
  GenerationOptions options = job.options;
  GenerationStats total;
  total.prompt_tokens = static_cast<std::uint32_t>(job.prompt.size());
  Status st;
  for (bool first = true;;) {
    std::vector<TokenId> forced;
    GenerationStats stats;
    if (thinking && thinking->spent()) {
      forced = thinking->close_now(ThinkingControl::Closed::budget);
    } else {
      bool budget_stop = false;
      std::vector<TokenId> emitted;  // apart from `sequence`, which generate() reads as its prompt
      st = session.generate(
          sequence, options,
          [&](TokenId id, std::string_view text) {
            emitted.push_back(id);
            if (thinking) thinking->next(id, false);  // ends of sequence never come here
            if (!job.token(text)) return false;
            budget_stop = thinking && thinking->spent();
            return !budget_stop;
          },
          stats, &locked);
      sequence.insert(sequence.end(), emitted.begin(), emitted.end());
      job.push(session.tail(), false);  // the text held back for stop strings
      // A restart's prefill is part of producing the answer: decode time.
      (first ? total.prefill_seconds : total.decode_seconds) += stats.prefill_seconds;
      first = false;
      total.decode_seconds += stats.decode_seconds;
      total.generated_tokens += stats.generated_tokens;
      total.stop = stats.stop;
      if (!st.ok()) break;
      if (budget_stop) {
        forced = thinking->close_now(ThinkingControl::Closed::budget);
      } else if (stats.stop == FinishReason::eog && thinking && thinking->in_thinking() && thinking->answer_after_eos()) {
        --total.generated_tokens;  // the end of sequence is replaced by the close
        forced = thinking->close_now(ThinkingControl::Closed::end_of_sequence);
      }
    }
    if (forced.empty()) break;
    for (TokenId id : forced) job.push(tok.decode({id}), true);
    total.generated_tokens += static_cast<std::uint32_t>(forced.size());
    sequence.insert(sequence.end(), forced.begin(), forced.end());
    if (options.max_tokens >= 0) {
      options.max_tokens = std::max<std::int64_t>(0, job.options.max_tokens - total.generated_tokens);
      if (options.max_tokens == 0) {
        total.stop = FinishReason::length;
        break;
      }
    }
    if (sequence.size() + 1 >= session.capacity()) {
      total.stop = FinishReason::context_full;
      break;
    }
  }
  if (thinking) {
    std::lock_guard lock(job.m);
    job.reasoning_tokens = thinking->reasoning_tokens();
    job.thinking_closed = thinking->forced();
  }
  const SpeculativeStats& after = decoder.stats();
  const std::uint64_t rounds = after.rounds - before.rounds;
  const double tpr = rounds ? double(after.emitted - before.emitted) / double(rounds) : 0;
  {
    std::lock_guard lock(tally_m_);
    spec_stats_[i] = after;
    metrics_.speculative(sum(spec_stats_));
  }
  if (st.ok()) metrics_.generation(total, 0);
  update_kv_metric(i);
  job.finish(std::move(st), total, tpr);
}

}  // namespace graft::server
