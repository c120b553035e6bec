#include "engine/session.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>

namespace graft {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::length: return "length";
    case FinishReason::eog: return "end of generation";
    case FinishReason::context_full: return "context full";
    case FinishReason::stop: return "stop string";
  }
  return "?";
}

Expected<std::unique_ptr<Session>> Session::create(std::shared_ptr<const Model> model, std::shared_ptr<KvStore> kv,
                                                   const SessionOptions& options, std::shared_ptr<Workspace> workspace) {
  if (!model || !kv) return Status(Errc::invalid_argument, "session: no model or no KV store");
  if (options.max_batch == 0) return Status(Errc::invalid_argument, "session: max_batch must be at least 1");
  const KvGeometry want = model->kv_geometry(kv->geometry().capacity), got = kv->geometry();
  if (got.n_layers != want.n_layers || got.n_kv_heads != want.n_kv_heads || got.head_dim_k != want.head_dim_k ||
      got.head_dim_v != want.head_dim_v)
    return Status(Errc::invalid_argument, "session: the KV store was made for another model's geometry");
  if (workspace && workspace->max_batch() < options.max_batch)
    return Status(Errc::invalid_argument, fmt::format("session: the shared workspace holds {} rows, fewer than max_batch {}",
                                                      workspace->max_batch(), options.max_batch));
  if (!workspace) {
    auto ws = model->new_workspace(options.max_batch);
    if (!ws) return std::move(ws).status();
    workspace = std::move(*ws);
  }
  std::unique_ptr<Session> s(new Session());
  if (model->hybrid()) {
    if (options.max_tree_rows == 0) return Status(Errc::invalid_argument, "session: max_tree_rows must be at least 1");
    auto state = model->new_recurrent_state(options.max_tree_rows);
    if (!state) return std::move(state).status();
    s->state_ = std::move(*state);
    s->state_checkpoints_ = options.state_checkpoints;
  }
  s->model_ = std::move(model);
  s->kv_ = std::move(kv);
  s->ws_ = std::move(workspace);
  s->max_batch_ = options.max_batch;
  s->capacity_source_ = options.capacity_source;
  GRAFT_TRY(s->reset());
  return s;
}

Status Session::reset() {
  tokens_.clear();
  clear_outputs();
  if (state_) {
    GRAFT_TRY(state_->zero());
    for (auto& c : checkpoints_) c->set_position(RecurrentState::kUnknown);
  }
  return kv_->truncate(0);
}

std::vector<std::uint32_t> Session::checkpoints() const {
  std::vector<std::uint32_t> at;
  for (const auto& c : checkpoints_)
    if (c->position() != RecurrentState::kUnknown) at.push_back(c->position());
  std::sort(at.begin(), at.end());
  return at;
}

std::uint64_t Session::state_bytes() const {
  std::uint64_t bytes = state_ ? state_->bytes() : 0;
  for (const auto& c : checkpoints_) bytes += c->bytes();
  return bytes;
}

void Session::take_checkpoint() {
  if (!state_ || state_checkpoints_ == 0) return;
  for (const auto& c : checkpoints_)
    if (c->position() == state_->position()) return;  // held already
  // A free one, or a new one while fewer than asked are held, else the earliest goes.
  RecurrentState* slot = nullptr;
  for (const auto& c : checkpoints_)
    if (c->position() == RecurrentState::kUnknown) slot = c.get();
  if (!slot && checkpoints_.size() < state_checkpoints_) {
    auto fresh = model_->new_recurrent_state(0);
    if (!fresh) {
      // Checkpoints only make cuts cheaper: without one, a cut runs more tokens again.
      spdlog::warn("recurrent state: no memory for checkpoint {} of {} ({}); cuts will re-run more tokens",
                   checkpoints_.size() + 1, state_checkpoints_, fresh.status().message());
      state_checkpoints_ = static_cast<std::uint32_t>(checkpoints_.size());
      if (checkpoints_.empty()) return;
    } else {
      checkpoints_.push_back(std::move(*fresh));
      slot = checkpoints_.back().get();
    }
  }
  if (!slot)
    slot = std::ranges::min_element(checkpoints_, {}, [](const auto& c) { return c->position(); })->get();
  Status st = settle_state();
  if (st.ok()) st = slot->copy_from(*state_);
  if (!st.ok())  // the slot stays unknown: never restored
    spdlog::warn("recurrent state: a checkpoint could not be taken ({})", st.message());
}

Status Session::settle_state() {
  if (!state_) return Status::success();
  if (Status st = model_->settle_recurrent(*state_); !st.ok()) return recover(std::move(st));
  return Status::success();
}

Status Session::sync_state() {
  if (!state_ || state_->position() == tokens_.size()) return Status::success();
  return rewind_state(static_cast<std::uint32_t>(tokens_.size()));
}

Status Session::rewind_state(std::uint32_t n) {
  // The latest checkpoint at or before n (a checkpoint past the committed tokens is stale), else
  // the empty state.
  const RecurrentState* from = nullptr;
  for (const auto& c : checkpoints_) {
    const std::uint32_t at = c->position();
    if (at == RecurrentState::kUnknown) continue;
    if (at > tokens_.size()) {
      c->set_position(RecurrentState::kUnknown);
      continue;
    }
    if (at <= n && (!from || at > from->position())) from = c.get();
  }
  if (state_->position() != RecurrentState::kUnknown && state_->position() <= n &&
      (!from || state_->position() >= from->position()))
    from = state_.get();  // already on the way
  GRAFT_TRY(from ? state_->copy_from(*from) : state_->zero());
  // The KV rows after the restart point are written again with the same values.
  const std::uint32_t start = state_->position();
  GRAFT_TRY(kv_->truncate(start));
  std::vector<float> scratch;
  for (std::uint32_t pos = start; pos < n; pos += max_batch_) {
    SequenceBatch batch;
    batch.tokens = std::span<const TokenId>(tokens_).subspan(pos, std::min(max_batch_, n - pos));
    batch.n_past = pos;
    batch.state = state_.get();
    GRAFT_TRY(model_->forward(*ws_, *kv_, batch, scratch));
  }
  return Status::success();
}

void Session::clear_outputs() {
  logits_.clear();
  candidate_ids_.clear();
  candidate_logits_.clear();
}

Status Session::check_room(std::size_t n) const {
  if (tokens_.size() + n <= capacity()) return Status::success();
  if (tokens_.empty())
    return Status(Errc::out_of_range, fmt::format("the prompt has {} tokens but the context holds {}: raise {}", n,
                                                  capacity(), capacity_source_));
  return Status(Errc::out_of_range, fmt::format("the sequence would hold {} tokens but the context holds {}: raise {}",
                                                tokens_.size() + n, capacity(), capacity_source_));
}

Status Session::append(std::span<const TokenId> tokens, bool all_logits) {
  if (tokens.empty()) return Status(Errc::invalid_argument, "append: no tokens");
  GRAFT_TRY(check_room(tokens.size()));
  const std::size_t n_vocab = model_->params().n_vocab;
  GRAFT_TRY(sync_state());
  std::vector<float> chunk;
  clear_outputs();
  for (std::size_t pos = 0; pos < tokens.size(); pos += max_batch_) {
    const std::size_t n = std::min<std::size_t>(max_batch_, tokens.size() - pos);
    SequenceBatch batch;
    batch.tokens = tokens.subspan(pos, n);
    batch.n_past = static_cast<std::uint32_t>(tokens_.size());
    batch.all_logits = all_logits;
    batch.state = state_.get();
    // The store may hold part of the tokens after a failure: drop them so the sequence stays what
    // tokens() says.
    if (Status st = model_->forward(*ws_, *kv_, batch, chunk); !st.ok()) return recover(std::move(st));
    tokens_.insert(tokens_.end(), batch.tokens.begin(), batch.tokens.end());
    if (n > 1) take_checkpoint();  // a prompt piece
    if (all_logits || pos + n == tokens.size()) logits_.insert(logits_.end(), chunk.begin(), chunk.end());
  }
  if (logits_.size() != (all_logits ? tokens.size() : 1) * n_vocab)
    return Status(Errc::internal, "append produced the wrong number of logits");
  return Status::success();
}

Status Session::decode_one(TokenId token, ForwardBatch& batch) {
  GRAFT_TRY(check_room(1));
  GRAFT_TRY(sync_state());
  clear_outputs();
  const SequenceRows seq{kv_.get(), 1, static_cast<std::uint32_t>(tokens_.size()), nullptr, state_.get()};
  batch.tokens = std::span<const TokenId>(&token, 1);
  batch.sequences = std::span<const SequenceRows>(&seq, 1);
  if (Status st = model_->forward(*ws_, batch, step_out_); !st.ok()) return recover(std::move(st));
  tokens_.push_back(token);
  return Status::success();
}

Expected<TokenId> Session::decode_argmax(TokenId token) {
  const std::uint32_t row = 0;
  ForwardBatch batch;
  batch.argmax_rows = std::span<const std::uint32_t>(&row, 1);
  GRAFT_TRY(decode_one(token, batch));
  return step_out_.argmax.at(0);
}

Status Session::decode_candidates(TokenId token, std::uint32_t k) {
  const std::uint32_t row = 0;
  ForwardBatch batch;
  batch.candidate_rows = std::span<const std::uint32_t>(&row, 1);
  batch.candidates = k;
  GRAFT_TRY(decode_one(token, batch));
  candidate_ids_ = step_out_.candidate_ids;
  candidate_logits_ = step_out_.candidate_logits;
  return Status::success();
}

std::uint32_t candidates_for(const Sampler& sampler, const Model& model) {
  const std::uint32_t k = sampler.candidates_needed(model.params().n_vocab);
  return k <= kMaxCandidates ? k : 0;
}

Status Session::append_together(Workspace& ws, std::span<const SessionStep> steps) {
  if (steps.empty()) return Status(Errc::invalid_argument, "append_together: no sessions");
  const Model* model = steps[0].session ? steps[0].session->model_.get() : nullptr;
  std::vector<TokenId> tokens;
  std::vector<SequenceRows> seqs;
  std::vector<std::uint32_t> last_rows, argmax_rows, candidate_rows;
  std::uint32_t k = 0;  // the candidates a row hands back: the most any step asks for
  for (const SessionStep& step : steps) {
    Session* s = step.session;
    if (!s || s->model_.get() != model)
      return Status(Errc::invalid_argument, "append_together: every session must run over the same model");
    if (step.tokens.empty()) return Status(Errc::invalid_argument, "append_together: a session has no tokens");
    for (const SessionStep& other : steps)
      if (&other != &step && other.session == s)
        return Status(Errc::invalid_argument, "append_together: a session appears twice");
    GRAFT_TRY(s->check_room(step.tokens.size()));
    GRAFT_TRY(s->sync_state());
    seqs.push_back(SequenceRows{s->kv_.get(), static_cast<std::uint32_t>(step.tokens.size()),
                                static_cast<std::uint32_t>(s->tokens_.size()), nullptr, s->state_.get()});
    tokens.insert(tokens.end(), step.tokens.begin(), step.tokens.end());
    (step.argmax ? argmax_rows : step.candidates ? candidate_rows : last_rows)
        .push_back(static_cast<std::uint32_t>(tokens.size() - 1));
    if (!step.argmax) k = std::max(k, step.candidates);
  }
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.sequences = seqs;
  batch.logit_rows = last_rows;
  batch.argmax_rows = argmax_rows;
  batch.candidate_rows = candidate_rows;
  batch.candidates = k;
  ForwardOutput out;
  if (Status st = model->forward(ws, batch, out); !st.ok()) {
    for (const SessionStep& step : steps) st = step.session->recover(std::move(st));
    return st;
  }
  const std::size_t V = model->params().n_vocab;
  for (std::size_t i = 0, logit = 0, greedy = 0, sampled = 0; i < steps.size(); ++i) {
    Session& s = *steps[i].session;
    s.tokens_.insert(s.tokens_.end(), steps[i].tokens.begin(), steps[i].tokens.end());
    s.clear_outputs();
    if (steps[i].argmax) {
      *steps[i].argmax = out.argmax[greedy++];
    } else if (steps[i].candidates) {
      // The row's k best; a step asking for fewer takes their first ones (the same as its own k best).
      const auto first = static_cast<std::ptrdiff_t>(sampled++ * k), last = first + steps[i].candidates;
      s.candidate_ids_.assign(out.candidate_ids.begin() + first, out.candidate_ids.begin() + last);
      s.candidate_logits_.assign(out.candidate_logits.begin() + first, out.candidate_logits.begin() + last);
    } else {
      s.logits_.assign(out.logits.begin() + logit * V, out.logits.begin() + (logit + 1) * V);
      ++logit;
    }
    if (steps[i].tokens.size() > 1) s.take_checkpoint();
  }
  return Status::success();
}

Status Session::forward(const SequenceBatch& batch, std::vector<float>& logits) {
  if (!state_) return model_->forward(*ws_, *kv_, batch, logits);
  // A hybrid model's rows follow the committed tokens: the state is theirs.
  if (batch.n_past != tokens_.size())
    return Status(Errc::invalid_argument, "session forward: a hybrid model's rows must follow the committed tokens");
  GRAFT_TRY(sync_state());
  SequenceBatch mine = batch;
  mine.state = state_.get();
  return model_->forward(*ws_, *kv_, mine, logits);
}

Status Session::forward(const ForwardBatch& batch, ForwardOutput& out) {
  Session* self = this;
  return forward_together(*ws_, std::span(&self, 1), batch, out);
}

Status Session::forward_together(Workspace& ws, std::span<Session* const> sessions, const ForwardBatch& batch,
                                 ForwardOutput& out) {
  if (sessions.empty() || batch.sequences.size() != sessions.size())
    return Status(Errc::invalid_argument, "session forward: the batch must hold one sequence per session");
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    const Session& s = *sessions[i];
    const SequenceRows& seq = batch.sequences[i];
    if (s.model_ != sessions[0]->model_)
      return Status(Errc::invalid_argument, "session forward: every session must run over the same model");
    if (seq.kv != s.kv_.get() || seq.n_past != s.tokens_.size())
      return Status(Errc::invalid_argument, "session forward: each sequence must be its session's KV store after its committed tokens");
    GRAFT_TRY(s.check_room(seq.n_tokens));
  }
  // Each sequence with its session's recurrent state, at its committed tokens.
  std::vector<SequenceRows> seqs(batch.sequences.begin(), batch.sequences.end());
  for (std::size_t i = 0; i < sessions.size(); ++i) {
    GRAFT_TRY(sessions[i]->sync_state());
    seqs[i].state = sessions[i]->state_.get();
  }
  ForwardBatch mine = batch;
  mine.sequences = seqs;
  return sessions[0]->model_->forward(ws, mine, out);
}

Status Session::commit_rows(std::span<const TokenId> tokens, std::span<const std::uint32_t> rows,
                            std::span<const float> logits) {
  const auto n_past = static_cast<std::uint32_t>(tokens_.size());
  if (tokens.size() != rows.size() || (!logits.empty() && logits.size() != model_->params().n_vocab))
    return Status(Errc::invalid_argument, "commit_rows: tokens, rows and logits do not fit together");
  bool in_place = true;
  std::vector<std::uint32_t> src(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i] <= rows[i - 1]) return Status(Errc::invalid_argument, "commit_rows: rows must ascend");
    if (n_past + rows[i] >= kv_->size()) return Status(Errc::out_of_range, "commit_rows: a row was never written");
    src[i] = n_past + rows[i];
    in_place = in_place && rows[i] == i;
  }
  // A hybrid model's state first: a token tree's path is recorded for the next pass to apply (a
  // refused path changes nothing: the pass's rows stay for another try); a chain moved it on
  // already.
  const auto kept = static_cast<std::uint32_t>(rows.size());
  const bool tree = state_ && !state_->pending_parents().empty() && state_->position() == n_past;
  if (tree) GRAFT_TRY(model_->commit_recurrent(*state_, rows));
  // The kept rows move down to follow the committed ones; everything after them goes.
  if (Status st = in_place ? kv_->truncate(n_past + kept) : kv_->compact(n_past, src); !st.ok())
    return recover(std::move(st));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  clear_outputs();
  logits_.assign(logits.begin(), logits.end());
  if (!state_ || tree) return Status::success();
  // A chain kept whole is a prompt piece (checkpointed); one cut short goes back to a checkpoint.
  if (state_->position() == n_past + kept && in_place) {
    if (kept > 1) take_checkpoint();
    return Status::success();
  }
  return sync_state();
}

Status Session::recover(Status failed) {
  const auto n = static_cast<std::uint32_t>(tokens_.size());
  Status cut = kv_->truncate(n);
  if (cut.ok()) cut = sync_state();  // a chain's pass moved the state on, or left it half-way
  if (cut.ok()) return failed;
  Status emptied = reset();
  return Status(failed.code(), fmt::format("{}; then the KV store could not be cut back to the {} committed tokens ({}), "
                                           "so the sequence {}",
                                           failed.message(), n, cut.message(),
                                           emptied.ok() ? "was emptied" : "is unusable: " + emptied.message()));
}

Status Session::truncate(std::uint32_t n) {
  if (n > tokens_.size()) return Status(Errc::out_of_range, "truncate: past the committed tokens");
  tokens_.resize(n);
  clear_outputs();
  GRAFT_TRY(kv_->truncate(n));
  for (auto& c : checkpoints_)
    if (c->position() != RecurrentState::kUnknown && c->position() > n) c->set_position(RecurrentState::kUnknown);
  if (Status st = sync_state(); !st.ok()) return recover(std::move(st));
  return Status::success();
}

Status PlainDecoder::prefill(Session& session, std::span<const TokenId> prompt) { return session.append(prompt); }

Status PlainDecoder::step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t /*max_new*/,
                          std::vector<TokenId>& out) {
  // Greedy with nothing added to the logits: the backend hands back the id alone.
  if (sampler.plain_argmax()) {
    auto next = session.decode_argmax(pending);
    if (!next) return std::move(next).status();
    out.push_back(*next);
    return Status::success();
  }
  // A chain that keeps at most its top_k tokens: the backend hands back those candidates alone.
  if (const std::uint32_t k = candidates_for(sampler, session.model())) {
    GRAFT_TRY(session.decode_candidates(pending, k));
    out.push_back(sampler.sample_candidates(session.candidate_ids(), session.candidate_logits()));
    return Status::success();
  }
  GRAFT_TRY(session.append(std::span<const TokenId>(&pending, 1)));
  out.push_back(sampler.sample(session.logits(), session.tokens()));
  return Status::success();
}

bool emit_token(TokenId id, const Tokenizer& tok, TextStream& text, std::int64_t max_tokens, const TokenFn& on_token,
                GenerationStats& stats) {
  ++stats.generated_tokens;
  if (tok.is_eog(id)) {
    stats.stop = FinishReason::eog;
    return false;
  }
  const TextStream::Piece piece = text.push(id);
  const bool go_on = on_token(id, piece.text);
  if (piece.stopped || !go_on) {
    stats.stop = FinishReason::stop;
    return false;
  }
  if (max_tokens >= 0 && stats.generated_tokens >= max_tokens) {
    stats.stop = FinishReason::length;
    return false;
  }
  return true;
}

bool prompt_only(std::int64_t max_tokens, GenerationStats& stats) {
  if (max_tokens != 0) return false;
  stats.stop = FinishReason::length;
  return true;
}

std::uint64_t max_new_tokens(std::uint64_t room, std::int64_t max_tokens, const GenerationStats& stats) {
  if (max_tokens < 0) return room;
  return std::min<std::uint64_t>(room, static_cast<std::uint64_t>(max_tokens) - stats.generated_tokens);
}

Status Session::generate(std::span<const TokenId> prompt, const GenerationOptions& options, const TokenFn& on_token,
                         GenerationStats& stats, TokenDecoder* decoder) {
  PlainDecoder plain;
  if (!decoder) decoder = &plain;
  stats = GenerationStats{};
  stats.prompt_tokens = static_cast<std::uint32_t>(prompt.size());
  sampler_.emplace(options.sampling);
  text_.emplace(model_->tokenizer(), options.stop);
  tail_.clear();
  if (prompt.empty()) return Status(Errc::invalid_argument, "the prompt is empty: nothing to continue from");
  GRAFT_TRY(reset());

  auto t0 = std::chrono::steady_clock::now();
  GRAFT_TRY(check_room(prompt.size()));
  GRAFT_TRY(decoder->prefill(*this, prompt));
  stats.prefill_seconds = seconds_since(t0);

  const std::int64_t max_tokens = options.max_tokens;
  t0 = std::chrono::steady_clock::now();
  auto emit = [&](TokenId id) { return emit_token(id, model_->tokenizer(), *text_, max_tokens, on_token, stats); };
  Status st;
  std::vector<TokenId> out;
  TokenId pending = 0;
  if (!prompt_only(max_tokens, stats) && emit(pending = sampler_->sample(logits_, tokens_))) {
    for (;;) {
      // The token after `pending` has no slot left to be sampled from.
      if (room() == 0) {
        stats.stop = FinishReason::context_full;
        break;
      }
      const std::uint64_t max_new = max_new_tokens(room(), max_tokens, stats);
      out.clear();
      st = decoder->step(*this, *sampler_, pending, static_cast<std::uint32_t>(max_new), out);
      if (!st.ok()) break;
      if (out.empty() || out.size() > max_new) {
        st = Status(Errc::internal, fmt::format("decoder step returned {} tokens for at most {}", out.size(), max_new));
        break;
      }
      bool go_on = true;
      for (TokenId id : out)
        if (!(go_on = emit(id))) break;
      if (!go_on) break;
      pending = out.back();
    }
  }
  stats.decode_seconds = stats.generated_tokens > 1 ? seconds_since(t0) : 0;
  tail_ = text_->finish();
  return st;
}

}  // namespace graft
