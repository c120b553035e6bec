#include "engine/session.hpp"

#include <fmt/format.h>

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
  logits_.clear();
  return kv_->truncate(0);
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
  std::vector<float> chunk;
  logits_.clear();
  for (std::size_t pos = 0; pos < tokens.size(); pos += max_batch_) {
    const std::size_t n = std::min<std::size_t>(max_batch_, tokens.size() - pos);
    SequenceBatch batch;
    batch.tokens = tokens.subspan(pos, n);
    batch.n_past = static_cast<std::uint32_t>(tokens_.size());
    batch.all_logits = all_logits;
    // The store may hold part of the tokens after a failure: drop them so the sequence stays what
    // tokens() says.
    if (Status st = model_->forward(*ws_, *kv_, batch, chunk); !st.ok()) return recover(std::move(st));
    tokens_.insert(tokens_.end(), batch.tokens.begin(), batch.tokens.end());
    if (all_logits || pos + n == tokens.size()) logits_.insert(logits_.end(), chunk.begin(), chunk.end());
  }
  if (logits_.size() != (all_logits ? tokens.size() : 1) * n_vocab)
    return Status(Errc::internal, "append produced the wrong number of logits");
  return Status::success();
}

Status Session::append_together(Workspace& ws, std::span<const SessionStep> steps) {
  if (steps.empty()) return Status(Errc::invalid_argument, "append_together: no sessions");
  const Model* model = steps[0].session ? steps[0].session->model_.get() : nullptr;
  std::vector<TokenId> tokens;
  std::vector<SequenceRows> seqs;
  std::vector<std::uint32_t> last_rows;
  for (const SessionStep& step : steps) {
    Session* s = step.session;
    if (!s || s->model_.get() != model)
      return Status(Errc::invalid_argument, "append_together: every session must run over the same model");
    if (step.tokens.empty()) return Status(Errc::invalid_argument, "append_together: a session has no tokens");
    for (const SessionStep& other : steps)
      if (&other != &step && other.session == s)
        return Status(Errc::invalid_argument, "append_together: a session appears twice");
    GRAFT_TRY(s->check_room(step.tokens.size()));
    seqs.push_back(SequenceRows{s->kv_.get(), static_cast<std::uint32_t>(step.tokens.size()),
                                static_cast<std::uint32_t>(s->tokens_.size()), nullptr});
    tokens.insert(tokens.end(), step.tokens.begin(), step.tokens.end());
    last_rows.push_back(static_cast<std::uint32_t>(tokens.size() - 1));
  }
  ForwardBatch batch;
  batch.tokens = tokens;
  batch.sequences = seqs;
  batch.logit_rows = last_rows;
  ForwardOutput out;
  if (Status st = model->forward(ws, batch, out); !st.ok()) {
    for (const SessionStep& step : steps) st = step.session->recover(std::move(st));
    return st;
  }
  const std::size_t V = model->params().n_vocab;
  for (std::size_t i = 0; i < steps.size(); ++i) {
    Session& s = *steps[i].session;
    s.tokens_.insert(s.tokens_.end(), steps[i].tokens.begin(), steps[i].tokens.end());
    s.logits_.assign(out.logits.begin() + i * V, out.logits.begin() + (i + 1) * V);
  }
  return Status::success();
}

Status Session::forward(const SequenceBatch& batch, std::vector<float>& logits) {
  return model_->forward(*ws_, *kv_, batch, logits);
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
  return sessions[0]->model_->forward(ws, batch, out);
}

Status Session::commit_rows(std::span<const TokenId> tokens, std::span<const std::uint32_t> rows,
                            std::span<const float> logits) {
  const auto n_past = static_cast<std::uint32_t>(tokens_.size());
  if (tokens.size() != rows.size() || logits.size() != model_->params().n_vocab)
    return Status(Errc::invalid_argument, "commit_rows: tokens, rows and logits do not fit together");
  bool in_place = true;
  std::vector<std::uint32_t> src(rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    if (i > 0 && rows[i] <= rows[i - 1]) return Status(Errc::invalid_argument, "commit_rows: rows must ascend");
    if (n_past + rows[i] >= kv_->size()) return Status(Errc::out_of_range, "commit_rows: a row was never written");
    src[i] = n_past + rows[i];
    in_place = in_place && rows[i] == i;
  }
  // The kept rows move down to follow the committed ones; everything after them goes.
  GRAFT_TRY(in_place ? kv_->truncate(n_past + static_cast<std::uint32_t>(rows.size())) : kv_->compact(n_past, src));
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  logits_.assign(logits.begin(), logits.end());
  return Status::success();
}

Status Session::recover(Status failed) {
  const auto n = static_cast<std::uint32_t>(tokens_.size());
  Status cut = kv_->truncate(n);
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
  logits_.clear();
  return kv_->truncate(n);
}

Status PlainDecoder::prefill(Session& session, std::span<const TokenId> prompt) { return session.append(prompt); }

Status PlainDecoder::step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t /*max_new*/,
                          std::vector<TokenId>& out) {
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
