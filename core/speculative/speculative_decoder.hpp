// The speculative round (docs/speculative.md), as the TokenDecoder Session::generate steps with:
// drafters propose; their trees merge into one under the round's budget; the target verifies the
// whole tree in ONE forward pass (ancestor mask, positions n_past + depth); the walk keeps the
// path the target agrees with and its own next token (tree_walk.hpp: exact and lossless); the
// KV cache keeps the accepted rows only and every drafter is told what was committed, with the
// hidden states it asked for, from that same pass. Near the end of the context or of max_tokens
// the budget shrinks to nothing and a round is a plain decode step.
// prefill() and step() are also offered in phases (plan, a pass the caller runs, finish), so one
// forward pass can carry the rounds and prompt pieces of several sequences (the server's
// --parallel N): run_planned() runs them together, each sequence reading back its own rows.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/session.hpp"
#include "speculative/drafter_slot.hpp"
#include "speculative/round_policy.hpp"
#include "speculative/spec_stats.hpp"
#include "speculative/token_tree.hpp"

namespace graft {

struct SpeculativeOptions {
  std::uint32_t max_nodes = 16;  // drafted tokens verified per round
  std::uint32_t max_depth = 8;   // longest path per round
  // Learn from every round (round_policy.hpp): verify only as many drafted nodes as pay for
  // themselves, ask each drafter for as many tokens as pay, and skip a drafter whose expected
  // gain is below its own cost. Off: every drafter, every node the budget allows.
  bool adaptive = true;
  // Tokens asked of every drafter per round: 0 = learnt per drafter (with adaptive), N = pinned.
  std::uint32_t draft_length = 0;
};

// One sequence's rows of a pass, as plan_prefill() / plan_step() lay them out.
struct PlannedRows {
  std::span<const TokenId> tokens;
  std::span<const std::int32_t> positions;    // one per row (RoPE)
  const std::uint8_t* ancestor = nullptr;     // the token tree's mask; null: causal
  std::span<const std::uint32_t> logit_rows;  // its rows (from 0) whose logits it reads
  std::span<const std::uint32_t> argmax_rows;  // its rows whose greedy ids alone it reads
  std::span<const std::uint32_t> candidate_rows;  // its rows whose best candidates alone it reads
  std::uint32_t candidates = 0;                   // how many per row
};

// Where a sequence's rows landed in a pass run_planned() ran.
struct PassPart {
  const ForwardOutput* out = nullptr;
  std::uint32_t total_rows = 0;  // rows of the whole pass (the stride of out->hidden's blocks)
  std::uint32_t row0 = 0;        // its first row
  std::uint32_t logit0 = 0;      // its first logit row in out->logits
  std::uint32_t argmax0 = 0;     // its first greedy id in out->argmax
  std::uint32_t candidate0 = 0;  // its first candidate row in out->candidate_ids / candidate_logits
  std::uint32_t candidate_stride = 0;  // candidates per row in the pass (the most any sequence asked for)
  double seconds = 0;            // the pass's time, its share of the rows (for the cost model)
};

class SpeculativeDecoder;
struct PlannedSequence {
  SpeculativeDecoder* decoder = nullptr;
  Session* session = nullptr;
};

// Runs the rows every pair planned in ONE forward pass on `ws` (the decoders' taps must be the
// same: decoders of one profile); parts[i] says where pair i's rows are in `out`. On an error no
// session's committed tokens change.
Status run_planned(Workspace& ws, std::span<const PlannedSequence> seqs, ForwardOutput& out,
                   std::vector<PassPart>& parts);

class SpeculativeDecoder final : public TokenDecoder {
 public:
  // owners: what the drafters may still refer to (their factories, the DrafterHost they were made
  // with), kept alive as long as the decoder.
  SpeculativeDecoder(std::vector<DrafterSlot> drafters, const SpeculativeOptions& options,
                     std::shared_ptr<const void> owners = nullptr);

  Status prefill(Session& session, std::span<const TokenId> prompt) override;
  Status step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t max_new,
              std::vector<TokenId>& out) override;

  // The phases. start(): a sequence begins on `session` with `prompt`, keeping the first `keep`
  // committed tokens (a prefix the prompt shares with them: the agent loop), as many as the
  // drafters hold too; returns how many it kept. Then plan_prefill() / finish_prefill() put the
  // rest of the prompt in, at most max_rows a pass, until prefilling() is false (the prompt's
  // logits then in session.logits()); then rounds of plan_step() / finish_step(), as step() but
  // verifying at most max_rows rows.
  // An error: the session could not be emptied for the new prompt.
  Expected<std::uint32_t> start(Session& session, std::span<const TokenId> prompt, std::uint32_t keep);
  bool prefilling() const { return prefill_at_ < prompt_.size(); }
  Status plan_prefill(Session& session, std::uint32_t max_rows);
  Status finish_prefill(Session& session, const PassPart& part);
  Status plan_step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t max_new,
                   std::uint32_t max_rows);
  Status finish_step(Session& session, Sampler& sampler, const PassPart& part, std::vector<TokenId>& out);
  const PlannedRows& planned() const { return planned_; }
  bool has_plan() const { return planned_kind_ != Planned::none; }
  std::span<const std::int32_t> taps() const { return taps_; }
  bool normed() const { return normed_; }
  // Where the verify pass leaves the taps: on the host for drafters that read them there, in
  // backend memory for those that run on the target's backend (DrafterNeeds::hidden_in_backend_memory)
  // where the host cannot read it; decided by start() from the session's backend.
  bool hidden_on_host() const { return hidden_on_host_; }
  bool hidden_on_device() const { return hidden_on_device_; }
  // Cuts the sequence back to n committed tokens, the drafters with it (a committed token was
  // replaced: a forced end of thinking).
  Status truncate(Session& session, std::uint32_t n);

  const SpeculativeStats& stats() const { return stats_; }
  const RoundPolicy& policy() const { return policy_; }
  // The opt-in file that keeps the policy across runs (profile key speculative.policy_file):
  // `identity` names the model and drafters it fits. Reads it when it exists; one that does not fit
  // or cannot be read is left alone with one warning (the policy then learns from scratch, and
  // save_policy() replaces the file). The output never depends on it.
  void use_policy_file(std::filesystem::path path, nlohmann::json identity);
  // Writes the policy there (atomically); success when no file is set.
  Status save_policy() const;
  // Takes over what `other` (a decoder over the same model and drafters: another server slot)
  // learnt, where RoundPolicy::should_adopt says its experience is worth more than this one's;
  // true when it did. Between requests only: the output never depends on it.
  bool adopt_policy(const SpeculativeDecoder& other);
  // One JSON line per round to `out` (null: none): who was asked, how deep, what each proposed and
  // would have had accepted alone, the verified nodes, the accepted path and the times
  // (`graft run --spec-trace FILE`; docs/speculative.md). The caller keeps `out` open.
  void trace_to(std::FILE* out) { trace_ = out; }
  void clear_stats() { stats_.clear_counts(); }
  const std::vector<DrafterSlot>& drafters() const { return drafters_; }

 private:
  // The drafters' hidden states for rows `rows` of the last pass, token-major (drafter_slot.hpp).
  // (rows counted from the sequence's first row in the pass `part`).
  HiddenStates hidden_for(std::size_t d, const PassPart& part, std::span<const std::uint32_t> rows,
                          std::uint32_t n_embd);
  void sync_stats();
  // Hands tokens context[first, size - 1) of the prompt piece in `part` (the first rows of the
  // sequence's part, these tokens') to every drafter's begin.
  Status begin_drafters(std::span<const TokenId> context, std::uint32_t first, const PassPart& part, std::uint32_t n_embd);

  std::shared_ptr<const void> owners_;  // declared first: destroyed after the drafters
  std::vector<DrafterSlot> drafters_;
  SpeculativeOptions options_;
  // Taps the verify pass computes: the union of the drafters' (tap_of_[d] indexes it).
  std::vector<std::int32_t> taps_;
  bool normed_ = false;
  std::vector<std::vector<std::uint32_t>> tap_of_;

  // The prompt's last token reaches the drafters at the first step, as a commit of one token
  // (its pending token is the first sampled one); its hidden rows per drafter wait here. The
  // rest of the prompt reaches them in prefill, so their prompt work counts as prefill.
  bool last_prompt_token_pending_ = false;
  std::vector<std::vector<float>> last_prompt_hidden_;
  bool wants_host_ = false, wants_device_ = false;        // what the drafters ask for
  bool hidden_on_host_ = false, hidden_on_device_ = false;  // where the passes put the taps (set by start())
  bool in_backend_memory(std::size_t d) const {
    return hidden_on_device_ && drafters_[d].needs().hidden_in_backend_memory;
  }
  // Backend memory for drafters that read their hidden states there: the rows of one call,
  // gathered token-major (a prompt piece's at most), and each such drafter's last prompt row.
  // Allocated by start() for the session's batch size, never in a round.
  Backend* backend_ = nullptr;
  std::unique_ptr<Buffer> device_rows_, device_last_;
  std::uint64_t device_last_stride_ = 0;  // floats per drafter in device_last_
  // A copy of hidden_for that failed (the drafter was handed no rows): the round's error.
  Status hidden_status_;
  Status take_hidden_status() { return std::exchange(hidden_status_, Status::success()); }
  // Copies the gathered rows into device_last_'s slot for drafter d.
  Status keep_last_prompt_row(std::size_t d, const HiddenStates& h);
  // The sequence being prefilled (the kept prefix included) and how much of it is committed.
  std::vector<TokenId> prompt_;
  std::size_t prefill_at_ = 0;
  std::uint32_t told_ = 0;  // committed tokens the drafters have been told of
  // What the planned pass is (finish_* checks it came from the matching plan_*).
  enum class Planned { none, prefill, step } planned_kind_ = Planned::none;
  PlannedRows planned_;
  std::uint32_t plan_n_past_ = 0;
  TokenId plan_pending_ = 0;
  std::uint32_t plan_logit_row_ = 0;

  SpeculativeStats stats_;
  // What to draft and verify; it learns across this decoder's sequences (a server's requests).
  RoundPolicy policy_;
  std::filesystem::path policy_file_;
  nlohmann::json policy_identity_;
  double plan_host_seconds_ = 0;  // the planned round's host work so far (merge, choices)
  std::vector<double> propose_took_, accept_took_;  // this round's proposal and accept() times per drafter
  std::FILE* trace_ = nullptr;
  std::vector<DraftTree> trees_;
  TokenTree tree_;
  std::vector<TokenId> context_, verify_tokens_;
  std::vector<std::int32_t> positions_;
  std::vector<std::uint8_t> mask_;
  std::vector<std::uint32_t> all_rows_;
  // What the planned round's walk reads: every row's logits, its greedy id (Sampler::plain_argmax)
  // or its best walk_k_ candidates (Sampler::candidates_needed).
  enum class Walk { logits, argmax, candidates } walk_ = Walk::logits;
  std::uint32_t walk_k_ = 0;
  std::vector<float> hidden_buf_;
  ForwardOutput out_;
  std::vector<PassPart> parts_;
};

}  // namespace graft
