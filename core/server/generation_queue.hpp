// The requests waiting for the model, and the worker thread that runs them on N sequences
// (--parallel N). Plain decoding runs every active sequence in ONE forward pass per step
// (Session::append_together: a decoding sequence's pending token and prefilling sequences' prompt
// pieces, up to max_batch rows); each request keeps its own KV store, sampler and text. With the
// profile's drafters each sequence has its own speculative decoder and a thread that runs its
// requests with Session::generate; the sequences take turns round by round (one decoder step at
// a time: the forward passes are not batched across them). Jobs whose client has gone are
// dropped before they start and stop at their next token once started.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "engine/pipeline.hpp"
#include "server/generation_job.hpp"
#include "server/server_metrics.hpp"
#include "server/thinking_control.hpp"
#include "speculative/speculative_decoder.hpp"

namespace graft::server {

// What a job gets when the server stops before it ran (HTTP 503).
Status shutting_down();

class GenerationQueue {
 public:
  // sessions: one per parallel sequence; decoders: none (plain batched decoding) or one per session.
  GenerationQueue(Pipeline& pipeline, std::vector<std::unique_ptr<Session>> sessions,
                  std::vector<std::unique_ptr<SpeculativeDecoder>> decoders, ServerMetrics& metrics,
                  double context_shift_at = 0, std::uint32_t context_keep = 0);
  ~GenerationQueue();  // stops: refuses waiting jobs, ends the running ones, joins the worker

  void submit(std::shared_ptr<GenerationJob> job);
  std::size_t depth() const;    // waiting
  std::size_t running() const;  // decoding or prefilling now
  std::uint32_t capacity() const { return slots_.front().session->capacity(); }  // tokens per request
  std::size_t parallel() const { return slots_.size(); }

 private:
  using Clock = std::chrono::steady_clock;
  struct Slot {
    std::unique_ptr<Session> session;
    std::shared_ptr<GenerationJob> job;  // null: free
    std::optional<Sampler> sampler;
    std::optional<TextStream> text;
    std::optional<ThinkingControl> thinking;
    GenerationStats stats;
    std::size_t prompt_at = 0;  // prompt tokens appended so far
    TokenId pending = 0;        // sampled and emitted, not yet appended
    std::vector<TokenId> refill;  // after a context shift: the kept tokens, prefilled again
    std::size_t refill_at = 0;
    Clock::time_point started, decoding;
  };

  void run();
  // Sequence i's thread with drafters: its requests one after another.
  void run_speculative_slot(std::size_t i);
  void run_speculative(std::size_t i, GenerationJob& job);
  // Moves waiting jobs into free slots; false when stopping.
  bool admit();
  // One batched forward pass over the active slots, then sampling and emitting.
  void step();
  void finish(Slot& slot, Status st);
  // Sequence i's KV use now (its own thread's view), and the sum over all sequences to the metrics.
  void update_kv_metric(std::size_t i);
  std::size_t index_of(const Slot& slot) const { return static_cast<std::size_t>(&slot - slots_.data()); }
  // The length at which a sequence shifts (0: never).
  std::uint32_t shift_threshold() const;
  void shift(Slot& slot);

  Pipeline& pipeline_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<SpeculativeDecoder>> decoders_;
  std::mutex step_m_;  // one decoder step (or prefill) at a time: they share the model's passes
  std::mutex tally_m_;  // the per-sequence figures /metrics sums
  std::vector<std::uint32_t> kv_used_;  // per sequence (under tally_m_)
  std::vector<SpeculativeStats> spec_stats_;  // per sequence's decoder (under tally_m_)
  ServerMetrics& metrics_;
  double context_shift_at_ = 0;
  std::uint32_t context_keep_ = 0;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<GenerationJob>> waiting_;
  std::size_t active_ = 0;  // slots with a job (under m_)
  bool stopping_ = false;
  std::vector<std::thread> workers_;
};

}  // namespace graft::server
