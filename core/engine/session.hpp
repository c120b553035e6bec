// One sequence over a shared Model: its KV store, for a hybrid model its recurrent state, its
// forward-pass scratch (Workspace), the tokens committed to it, and, while generating, its
// sampler and text stream. Many sessions may run over one Model; each touches only its own
// memory.
//
// A recurrent state cannot be cut back like a KV cache. The session keeps copies of it
// (checkpoints) after prompt pieces, and a cut to an earlier length (truncate, a failed pass, a
// verify pass whose rows were not all kept) restores the latest checkpoint at or before that
// length and runs the tokens after it again: exact, and as cheap as the checkpoints are near
// (docs/architecture.md, "Per-sequence state").
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "engine/text_stream.hpp"
#include "engine/token_decoder.hpp"
#include "graft/kv_store.hpp"
#include "model/model.hpp"
#include "sampling/sampler.hpp"

namespace graft {

enum class FinishReason { length, eog, context_full, stop };
const char* finish_reason_name(FinishReason r);

struct GenerationStats {
  std::uint32_t prompt_tokens = 0;
  std::uint32_t generated_tokens = 0;
  double prefill_seconds = 0;  // prompt forward passes, up to the first sampled token
  double decode_seconds = 0;   // every later forward pass and sampling step
  FinishReason stop = FinishReason::length;
  double prefill_tps() const { return prefill_seconds > 0 ? prompt_tokens / prefill_seconds : 0; }
  // As the field reports it: the first token comes from prefill, so (generated - 1) / decode time.
  double decode_tps() const {
    return decode_seconds > 0 && generated_tokens > 1 ? (generated_tokens - 1) / decode_seconds : 0;
  }
};

struct GenerationOptions {
  std::int64_t max_tokens = -1;  // < 0: until end of generation or a full context
  SamplingSettings sampling;
  std::vector<std::string> stop;  // stop strings (never output)
};

// Each generated token (end-of-generation tokens excepted) with the text it adds to the output
// (TextStream); return false to stop.
using TokenFn = std::function<bool(TokenId id, std::string_view text)>;

// One generated token through the checks plain decoding makes: end of generation, stop strings,
// the caller's on_token, max_tokens (< 0: none). Counts it in stats; false: generation is over and
// stats.stop says why. Session::generate and the server's batched decoding share it.
bool emit_token(TokenId id, const Tokenizer& tok, TextStream& text, std::int64_t max_tokens, const TokenFn& on_token,
                GenerationStats& stats);

// The rest of the length rules, also shared: max_tokens 0 asks for the prompt only (the
// generation ends with "length" before anything is sampled: true, and stats says so), and a
// decoding step may return at most max_new tokens (every one but the last is committed: no more
// than the session's room, nor than max_tokens still wants).
bool prompt_only(std::int64_t max_tokens, GenerationStats& stats);
std::uint64_t max_new_tokens(std::uint64_t room, std::int64_t max_tokens, const GenerationStats& stats);

struct SessionOptions {
  std::uint32_t max_batch = 256;  // rows per forward pass (prompts go in pieces of this size)
  // Where the KV capacity comes from, for the error when a prompt exceeds it.
  std::string capacity_source = "--ctx";
  // Hybrid models: the rows of the largest token tree a verify pass may hold (the speculative
  // decoder's max_nodes + 1; Pipeline takes the profile's), and how many checkpoints of the
  // recurrent state to keep.
  std::uint32_t max_tree_rows = 17;
  std::uint32_t state_checkpoints = 4;
};

class Session;

// One session's share of a batched step: tokens to commit after its committed ones.
struct SessionStep {
  Session* session = nullptr;
  std::span<const TokenId> tokens;
  // Non-null: only the greedy choice after the last token is wanted (Session::decode_argmax's),
  // written here; the session's logits() are then left empty.
  TokenId* argmax = nullptr;
  // Non-zero (and argmax null): only this many best candidates after the last token are wanted
  // (Session::decode_candidates's), left in the session's candidate_ids() / candidate_logits().
  std::uint32_t candidates = 0;
};

// How many candidates a step for this sampler reads instead of a row of logits
// (Sampler::candidates_needed, where a pass can hand back that many); 0: the logits.
std::uint32_t candidates_for(const Sampler& sampler, const Model& model);

class Session {
 public:
  // kv: an empty store of model->kv_geometry(capacity). workspace: one to share with sessions that
  // never run a forward pass at the same time as this one, at least options.max_batch rows; null:
  // a workspace of its own.
  static Expected<std::unique_ptr<Session>> create(std::shared_ptr<const Model> model, std::shared_ptr<KvStore> kv,
                                                   const SessionOptions& options,
                                                   std::shared_ptr<Workspace> workspace = nullptr);

  const Model& model() const { return *model_; }
  KvStore& kv() { return *kv_; }
  // The delta-net layers' state of a hybrid model; null for others. A path accepted after a tree
  // pass is applied by the next pass (RecurrentState::deferred); settle_state() applies it now,
  // before the state's memory is read directly.
  RecurrentState* recurrent() { return state_.get(); }
  Status settle_state();
  // The positions of the recurrent state's checkpoints held now (ascending).
  std::vector<std::uint32_t> checkpoints() const;
  // Bytes of the recurrent state with its kept tree rows, and of its checkpoints (each allocated
  // when first taken).
  std::uint64_t state_bytes() const;
  Workspace& workspace() { return *ws_; }
  std::uint32_t capacity() const { return kv_->geometry().capacity; }
  // Tokens decoding may still commit: it commits a pending token while the one after it has a slot
  // to be sampled from (committed + 1 < capacity). A decoder step returns at most this many.
  std::uint32_t room() const {
    return tokens_.size() + 1 < capacity() ? capacity() - 1 - static_cast<std::uint32_t>(tokens_.size()) : 0;
  }
  std::uint32_t max_batch() const { return max_batch_; }
  // Tokens committed to the KV store, in order.
  std::span<const TokenId> tokens() const { return tokens_; }
  // The logits after the last append(): n_vocab floats (n_vocab per token with all_logits); empty
  // after a step that read greedy ids only (decode_argmax, a greedy speculative round).
  const std::vector<float>& logits() const { return logits_; }
  // After decode_candidates (or a step asking for them): the last token's best candidates, best
  // first (ForwardOutput::candidate_ids / candidate_logits); empty after any other step.
  std::span<const TokenId> candidate_ids() const { return candidate_ids_; }
  std::span<const float> candidate_logits() const { return candidate_logits_; }

  // Empties the sequence (the KV store keeps its memory).
  Status reset();
  // Commits tokens after the committed ones, max_batch per forward pass; keeps the logits of the
  // last token, or of every appended token with all_logits.
  Status append(std::span<const TokenId> tokens, bool all_logits = false);
  // Commits one token and returns the greedy choice after it (the largest logit, the lowest id
  // among equal ones), computed by the backend where the logits are: on a GPU one id comes back,
  // not n_vocab floats. What a sampler with plain_argmax() would draw from logits(); logits() is
  // empty afterwards.
  Expected<TokenId> decode_argmax(TokenId token);
  // Commits one token and keeps the k best candidates after it (ids and logits, picked by the
  // backend: on a GPU 8 bytes each come back, not n_vocab floats), what a sampler with
  // candidates_needed() == k draws from; logits() is empty afterwards.
  Status decode_candidates(TokenId token, std::uint32_t k);
  // Several sessions over one Model in ONE forward pass (every row through each matmul together,
  // each session's attention over its own KV store), using `ws` (at least as many rows as the
  // steps' tokens together). Each session commits its tokens and its logits() become those of its
  // last token, bit for bit what its own append() would give (or, for a step with `argmax`, that
  // token's greedy id is written there). On an error no session's committed tokens change.
  static Status append_together(Workspace& ws, std::span<const SessionStep> steps);
  // One forward pass of this sequence as the caller lays it out (a verify pass, a benchmark),
  // leaving the committed list alone. A hybrid model's rows must follow the committed tokens; a
  // chain pass moves its state on, and the next call brings it back unless commit_rows kept them.
  Status forward(const SequenceBatch& batch, std::vector<float>& logits);
  // The same with every output ForwardBatch offers (hidden-state taps, chosen logit rows); the
  // batch holds one sequence: this session's KV store after its committed tokens.
  Status forward(const ForwardBatch& batch, ForwardOutput& out);
  // Such a pass over several sessions at once on `ws`: batch.sequences[i] is sessions[i]'s KV
  // store after its committed tokens (verify passes of several sequences, prompt pieces).
  static Status forward_together(Workspace& ws, std::span<Session* const> sessions, const ForwardBatch& batch,
                                 ForwardOutput& out);
  // After such a pass wrote rows at slots tokens().size()..: keeps the rows `rows` (ascending) as
  // the next committed tokens `tokens`, in that order, drops every other slot written (KV
  // compact/truncate) and sets logits() to `logits` (the last kept row's; empty: a pass that read
  // greedy ids only, ForwardBatch::argmax_rows).
  Status commit_rows(std::span<const TokenId> tokens, std::span<const std::uint32_t> rows,
                     std::span<const float> logits);
  // After a failed forward pass: the KV store cut back to the committed tokens (a pass may have
  // written some rows). Returns `failed`, with what went wrong on the way back when that failed too
  // (the sequence is then emptied, so it stays what tokens() says).
  Status recover(Status failed);
  // Forget every committed token from n on (a hybrid model: its state back to n tokens).
  Status truncate(std::uint32_t n);

  // Generation from a fresh sequence: prefill the prompt, then step with `decoder` (null: one
  // token per forward pass) until a stop. The sampler and text stream live for the call; text()
  // and sampler() report them afterwards.
  Status generate(std::span<const TokenId> prompt, const GenerationOptions& options, const TokenFn& on_token,
                  GenerationStats& stats, TokenDecoder* decoder = nullptr);
  // The last generate()'s sampler (its seed) and output text; the text held back at the end is
  // released by generate() into text() and returned by tail().
  const Sampler* sampler() const { return sampler_ ? &*sampler_ : nullptr; }
  const std::string& text() const { return text_ ? text_->text() : empty_; }
  const std::string& tail() const { return tail_; }

 private:
  Session() = default;
  // Whether n more tokens fit the KV store; the error names the capacity and where it is set.
  Status check_room(std::size_t n) const;
  // Empties logits() and the candidates: a step fills in what it read.
  void clear_outputs();
  // Commits one token with a one-row pass asking for `batch`'s outputs (the caller sets which;
  // this sets its tokens and sequence) into step_out_; a failure leaves the sequence as it was.
  Status decode_one(TokenId token, ForwardBatch& batch);
  // The recurrent state at the committed tokens again when a pass left it elsewhere.
  Status sync_state();
  // The recurrent state (and KV store) at n <= tokens().size() tokens: the latest checkpoint at or
  // before n, then tokens n_checkpoint..n run again.
  Status rewind_state(std::uint32_t n);
  // A copy of the state at its position, replacing the earliest when all are taken. Best effort:
  // a checkpoint that cannot be allocated or copied is a warning (cuts then re-run more tokens).
  void take_checkpoint();

  // Members in this order so the workspace and store (backend memory) go before the model.
  std::shared_ptr<const Model> model_;
  std::shared_ptr<KvStore> kv_;
  std::unique_ptr<RecurrentState> state_;
  std::vector<std::unique_ptr<RecurrentState>> checkpoints_;  // position() kUnknown: free
  std::uint32_t state_checkpoints_ = 0;
  std::shared_ptr<Workspace> ws_;
  std::uint32_t max_batch_ = 0;
  std::string capacity_source_;
  std::vector<TokenId> tokens_;
  std::vector<float> logits_;
  std::vector<TokenId> candidate_ids_;
  std::vector<float> candidate_logits_;
  ForwardOutput step_out_;  // decode_argmax's and decode_candidates's pass output, reused
  std::optional<Sampler> sampler_;
  std::optional<TextStream> text_;
  std::string tail_;
  std::string empty_;
};

}  // namespace graft
