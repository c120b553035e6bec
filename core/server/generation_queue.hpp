// The requests waiting for the model, and the worker thread that runs them on N sequences
// (--parallel N). Plain decoding runs every active sequence in ONE forward pass per step
// (Session::append_together: a decoding sequence's pending token and prefilling sequences' prompt
// pieces, up to max_batch rows); each request keeps its own KV store, sampler and text. With the
// profile's drafters each sequence has its own speculative decoder (its own drafter instances),
// and every step is still ONE forward pass: each decoding sequence's verify rows (its pending
// token and drafted tree) and prompt pieces together (run_planned). Jobs whose client has gone
// are dropped before they start and stop at their next token once started.
#pragma once

#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

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
  // Bytes held for the sequences: their KV stores (device and host) and their workspaces, a
  // shared one counted once (/props "memory").
  nlohmann::json memory() const;

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
    bool shifting = false;  // with drafters: the shifted sequence is going in again
    std::uint64_t rounds0 = 0, emitted0 = 0;  // its decoder's counts when the job started
    Clock::time_point started, decoding;
  };

  void run();
  // Moves waiting jobs into free slots; false when stopping.
  bool admit();
  // One batched forward pass over the active slots, then sampling and emitting: plain decoding,
  // or with the drafters a speculative round per decoding sequence.
  void step();
  void step_speculative();
  // Starts the admitted jobs (keeping the prompt's prefix their sequence holds); drops those whose
  // client went away.
  void start_admitted();
  // A job starts on its slot, its first `kept` prompt tokens already in the sequence.
  void start_job(Slot& slot, std::uint32_t kept);
  // The token to emit for a sampled one (a forced end of thinking may replace it).
  TokenId thought(Slot& slot, TokenId sampled);
  // Emits `id`; false when the job is over (it is then finished). `last`: the step's last token
  // (the next pending one), after which a full context ends the job.
  bool take(Slot& slot, TokenId id, bool last = true);
  void finish(Slot& slot, Status st);
  // Sequence i's KV use now, and the sum over all sequences to the metrics.
  void update_kv_metric(std::size_t i);
  std::size_t index_of(const Slot& slot) const { return static_cast<std::size_t>(&slot - slots_.data()); }
  // The length at which a sequence shifts (0: never).
  std::uint32_t shift_threshold() const;
  // The tokens a context shift keeps (noted in the job and the metrics).
  std::vector<TokenId> kept_by_shift(Slot& slot);
  // The sequence whose round policy learnt from the most rounds (null without drafters).
  const SpeculativeDecoder* most_experienced() const;
  Status shift(Slot& slot);
  Status shift_speculative(std::size_t i);

  Pipeline& pipeline_;
  std::vector<Slot> slots_;
  std::vector<std::unique_ptr<SpeculativeDecoder>> decoders_;
  ForwardOutput pass_;  // the last speculative pass's output
  std::vector<PassPart> parts_;
  std::vector<std::uint32_t> kv_used_, kv_committed_;  // per sequence (the worker's)
  ServerMetrics& metrics_;
  double context_shift_at_ = 0;
  std::uint32_t context_keep_ = 0;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<GenerationJob>> waiting_;
  std::size_t active_ = 0;  // slots with a job (under m_)
  bool stopping_ = false;
  std::thread worker_;
};

}  // namespace graft::server
