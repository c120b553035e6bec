// The forward pass of every architecture, top to bottom. Shapes are [ne0, ne1, ...] with ne0 contiguous;
// E = n_embd, D = head_dim, H = n_head, HKV = n_head_kv, F = n_ff, V = n_vocab, n = rows in the
// batch (the rows of every sequence in it, one sequence after another).
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "model/model.hpp"
#include "model/recurrent_state.hpp"

namespace graft {

namespace {

// Runs of consecutive rows (one head chunk's norm call each).
std::size_t runs_of(std::span<const std::uint32_t> rows) {
  std::size_t runs = 0;
  for (std::size_t i = 0; i < rows.size(); ++i)
    if (i == 0 || rows[i] != rows[i - 1] + 1) ++runs;
  return runs;
}

// What decides the launches of a pass (so a graph made for one pass can be updated for another
// of the same key): rows per sequence and which are trees or carry a state, the logit rows as
// runs of consecutive rows (one norm call each), the greedy rows likewise, the taps and where they
// go. Slots, positions and ids may differ.
std::string graph_key(const ForwardBatch& b) {
  std::string key = fmt::format("{}:", b.tokens.size());
  for (const SequenceRows& s : b.sequences)
    key += fmt::format("{}{}{},", s.n_tokens, s.ancestor ? "t" : "", s.state ? "s" : "");
  const std::size_t runs = runs_of(b.logit_rows);
  key += fmt::format("|{}/{}|{}/{}|{}/{}x{}|", b.logit_rows.size(), runs, b.argmax_rows.size(), runs_of(b.argmax_rows),
                     b.candidate_rows.size(), runs_of(b.candidate_rows), b.candidates);
  for (std::int32_t t : b.hidden_layers) key += fmt::format("{},", t);
  return key + (b.hidden_normed_output ? "n" : "") + (b.hidden_on_host ? "h" : "") + (b.hidden_on_device ? "d" : "");
}

}  // namespace

Status Model::matmul(const MatrixWeight& w, float* x, std::uint32_t n, float* y) const {
  return block_->matmul(w, x, n, y);
}

Status Model::embed(Workspace& ws, const TensorView& ids) const {
  // token_embd [E, V]: x[i] = row ids[i].
  const MatrixWeight& table = weights_.token_embd;
  return table.kernels->get_rows(*backend_, table.view, table.prepared.get(), ids, device_f32(ws.x, params_.n_embd, ids.ne[0]));
}

Status Model::layer(Workspace& ws, const LayerWeights& L, std::uint32_t slot, std::span<const SequenceRows> seqs,
                    const TensorView& positions, std::uint32_t n) const {
  // x += the decoder block (decoder_block.cpp: norms, attention or delta-net, SwiGLU, residuals).
  return block_->layer(ws, L, slot, seqs, positions, n, ws.x);
}

namespace {
// Whether `rows` is a path from the root of the tree the last pass kept: each row's parent is the
// one before it.
Status check_path(const RecurrentState& state, std::span<const std::uint32_t> rows) {
  const auto parents = state.pending_parents();
  if (rows.empty()) return Status::success();
  if (parents.empty()) return Status(Errc::invalid_argument, "commit_recurrent: no token tree is pending");
  for (std::size_t j = 0; j < rows.size(); ++j) {
    if (rows[j] >= parents.size())
      return Status(Errc::out_of_range, fmt::format("commit_recurrent: row {} of a tree of {}", rows[j], parents.size()));
    const std::int32_t want = j == 0 ? -1 : static_cast<std::int32_t>(rows[j - 1]);
    if (parents[rows[j]] != want)
      return Status(Errc::invalid_argument,
                    fmt::format("commit_recurrent: row {} does not follow {} in the tree", rows[j], want));
  }
  return Status::success();
}
}  // namespace

Status Model::commit_recurrent(RecurrentState& state, std::span<const std::uint32_t> rows) const {
  GRAFT_TRY(check_path(state, rows));
  if (rows.empty())
    state.clear_pending();
  else
    GRAFT_TRY(state.defer(rows));  // applied layer by layer by the next pass, just before it reads each layer
  return Status::success();
}

Status Model::settle_recurrent(RecurrentState& state) const {
  if (state.deferred().empty()) return Status::success();
  // Unknown until every layer has moved on (a failure half-way is rebuilt by the owner).
  const std::uint32_t at = state.position();
  state.set_position(RecurrentState::kUnknown);
  std::uint32_t index = 0;
  for (const LayerWeights& L : weights_.layers)
    if (L.kind == LayerKind::delta_net) {
      if (Status st = block_->settle_delta_net(index++, state); !st.ok()) {
        state.clear_deferred();
        return st;
      }
    }
  state.clear_deferred();
  state.set_position(at);
  return Status::success();
}

Status Model::head_chunk(Workspace& ws, std::span<const std::uint32_t> rows) const {
  const auto& p = params_;
  const std::int64_t E = p.n_embd;
  const auto chunk = static_cast<std::uint32_t>(rows.size());
  // h[j] = rms_norm(x[rows[j]]) * output_norm [E], one call per run of consecutive rows.
  for (std::uint32_t j = 0; j < chunk;) {
    std::uint32_t run = 1;
    while (j + run < chunk && rows[j + run] == rows[j] + run) ++run;
    GRAFT_TRY(backend_->rms_norm(device_f32(ws.x + std::int64_t(rows[j]) * E, E, run), weights_.output_norm.view,
                                 p.rms_eps, device_f32(ws.h + std::int64_t(j) * E, E, run)));
    j += run;
  }
  // logits [V, chunk] = h * output [E, V] (token_embd when tied).
  return matmul(weights_.output, ws.h, chunk, ws.logits);
}

Status Model::head(Workspace& ws, std::span<const std::uint32_t> rows, float* logits, MemoryKind logits_memory) const {
  const std::size_t V = params_.n_vocab;
  for (std::size_t r = 0; r < rows.size(); r += kLogitRows) {
    const auto chunk = static_cast<std::uint32_t>(std::min<std::size_t>(kLogitRows, rows.size() - r));
    GRAFT_TRY(head_chunk(ws, rows.subspan(r, chunk)));
    // On their way to the host: the stream runs the copy before the next chunk's matmul
    // overwrites ws.logits.
    GRAFT_TRY(backend_->copy_async(logits + r * V, logits_memory, ws.logits, MemoryKind::device,
                                   chunk * V * sizeof(float)));
  }
  return Status::success();
}

Status Model::head_top_k(Workspace& ws, std::span<const std::uint32_t> rows, std::uint32_t k, TokenId* ids,
                         float* logits, MemoryKind out_memory) const {
  const std::int64_t V = params_.n_vocab;
  for (std::size_t r = 0; r < rows.size(); r += kLogitRows) {
    const auto chunk = static_cast<std::uint32_t>(std::min<std::size_t>(kLogitRows, rows.size() - r));
    GRAFT_TRY(head_chunk(ws, rows.subspan(r, chunk)));
    // ids [k, chunk]: each row's k best, where the logits are; only they travel.
    TensorView best = i32_view(ws.top_ids, std::int64_t(k) * chunk, MemoryKind::device);
    best.n_dims = 2;
    best.ne = {k, chunk, 1, 1};
    best.nb[1] = sizeof(std::int32_t) * k;
    const std::size_t n = std::size_t(k) * chunk;
    GRAFT_TRY(backend_->top_k(device_f32(ws.logits, V, chunk), k, best,
                              logits ? device_f32(ws.top_logits, k, chunk) : TensorView{}));
    GRAFT_TRY(backend_->copy_async(ids + r * k, out_memory, ws.top_ids, MemoryKind::device, n * sizeof(std::int32_t)));
    if (logits)
      GRAFT_TRY(backend_->copy_async(logits + r * k, out_memory, ws.top_logits, MemoryKind::device, n * sizeof(float)));
  }
  return Status::success();
}

Status Model::copy_rows_out(const float* src, std::uint32_t rows, float* dst, MemoryKind dst_memory) const {
  return backend_->copy_async(dst, dst_memory, src, MemoryKind::device,
                              std::size_t(rows) * params_.n_embd * sizeof(float));
}

Status Model::forward(Workspace& ws, const ForwardBatch& batch, ForwardOutput& out) const {
  const auto& p = params_;
  const auto n = static_cast<std::uint32_t>(batch.tokens.size());
  const std::uint32_t n_layers = p.n_main_layers();
  // The batch as a whole: sizes, ids and the outputs asked for.
  if (n == 0) return Status(Errc::invalid_argument, "forward: empty batch");
  if (n > ws.max_batch())
    return Status(Errc::invalid_argument, fmt::format("forward: {} tokens exceed the batch size {}", n, ws.max_batch()));
  if (!batch.positions.empty() && batch.positions.size() != n)
    return Status(Errc::invalid_argument, "forward: positions and tokens differ in length");
  std::uint64_t seq_rows = 0;
  for (const SequenceRows& s : batch.sequences) {
    if (!s.kv) return Status(Errc::invalid_argument, "forward: a sequence has no KV store");
    seq_rows += s.n_tokens;
    if (!needs_.delta_net) continue;
    // A hybrid model's sequence brings its recurrent state too, at its n_past.
    if (!s.state)
      return Status(Errc::invalid_argument,
                    fmt::format("forward: a sequence of a {} model has no recurrent state for its delta-net layers",
                                p.arch_name));
    if (s.state->position() != s.n_past)
      return Status(Errc::invalid_argument,
                    fmt::format("forward: the recurrent state holds {} tokens but the sequence's rows follow {}",
                                s.state->position(), s.n_past));
    if (s.ancestor && s.n_tokens > s.state->max_pending())
      return Status(Errc::invalid_argument,
                    fmt::format("forward: a token tree of {} rows exceeds the {} rows the recurrent state keeps",
                                s.n_tokens, s.state->max_pending()));
    for (const SequenceRows& other : batch.sequences)
      if (&other != &s && other.state == s.state)
        return Status(Errc::invalid_argument, "forward: two sequences share one recurrent state");
  }
  if (seq_rows != n)
    return Status(Errc::invalid_argument,
                  fmt::format("forward: the sequences hold {} rows but the batch has {} tokens", seq_rows, n));
  for (TokenId t : batch.tokens)
    if (t < 0 || static_cast<std::uint32_t>(t) >= p.n_vocab)
      return Status(Errc::out_of_range, fmt::format("forward: token id {} is outside the vocabulary (0..{})", t, p.n_vocab - 1));
  for (std::uint32_t r : batch.logit_rows)
    if (r >= n) return Status(Errc::out_of_range, fmt::format("forward: logits asked for row {} of {}", r, n));
  for (std::uint32_t r : batch.argmax_rows)
    if (r >= n) return Status(Errc::out_of_range, fmt::format("forward: a greedy id asked for row {} of {}", r, n));
  for (std::uint32_t r : batch.candidate_rows)
    if (r >= n) return Status(Errc::out_of_range, fmt::format("forward: candidates asked for row {} of {}", r, n));
  if (!batch.candidate_rows.empty() &&
      (batch.candidates < 1 || batch.candidates > std::min(kMaxCandidates, p.n_vocab)))
    return Status(Errc::invalid_argument, fmt::format("forward: {} candidates per row; 1 to {} are possible",
                                                      batch.candidates, std::min(kMaxCandidates, p.n_vocab)));
  for (std::int32_t id : batch.hidden_layers)
    if (id < 0 || static_cast<std::uint32_t>(id) > n_layers)
      return Status(Errc::out_of_range,
                    fmt::format("forward: hidden-state tap {} is outside 0..{} (the layers' inputs, then the output)",
                                id, n_layers));
  // RoPE positions: n_past + i within each sequence unless given.
  std::span<const std::int32_t> positions = batch.positions;
  if (batch.positions.empty()) {
    ws.positions.resize(n);
    std::uint32_t r = 0;
    for (const SequenceRows& s : batch.sequences)
      for (std::uint32_t i = 0; i < s.n_tokens; ++i) ws.positions[r++] = static_cast<std::int32_t>(s.n_past + i);
    positions = ws.positions;
  }
  for (const SequenceRows& s : batch.sequences)
    if (s.ancestor && s.n_tokens > Workspace::kMaxTreeRows)
      return Status(Errc::invalid_argument, fmt::format("forward: a token tree of {} rows exceeds the {} a pass takes",
                                                        s.n_tokens, Workspace::kMaxTreeRows));

  const std::size_t block = std::size_t(n) * p.n_embd;
  const std::size_t hidden_floats = (batch.hidden_layers.size() + (batch.hidden_normed_output ? 1 : 0)) * block;
  out.hidden.resize(batch.hidden_on_host ? hidden_floats : 0);
  // Taps kept in backend memory: a buffer for the largest pass so far (a prompt's first piece is
  // the largest, so this allocates once in practice).
  float* hidden_dev = nullptr;
  if (batch.hidden_on_device && hidden_floats > 0) {
    if (!out.device_hidden || out.device_hidden->size() < hidden_floats * sizeof(float)) {
      out.device_hidden.reset();
      auto buf = backend_->allocate(hidden_floats * sizeof(float), MemoryKind::device);
      if (!buf) return std::move(buf).status();
      out.device_hidden = std::move(*buf);
    }
    hidden_dev = static_cast<float*>(out.device_hidden->data());
  }
  out.logits.resize(batch.logit_rows.size() * std::size_t(p.n_vocab));
  out.argmax.resize(batch.argmax_rows.size());
  const std::size_t n_candidates = batch.candidate_rows.size() * std::size_t(batch.candidates);
  out.candidate_ids.resize(n_candidates);
  out.candidate_logits.resize(n_candidates);
  // With a graph, the outputs go to the workspace's pinned buffer (logits, then taps) and from
  // there to `out` after the pass; without one, straight to `out`.
  const bool graph = graphs_ && ws.graph_outputs && n <= Workspace::kGraphMaxRows &&
                     batch.logit_rows.size() <= Workspace::kGraphLogitRows &&
                     batch.argmax_rows.size() <= Workspace::kGraphLogitRows &&
                     batch.candidate_rows.size() <= Workspace::kGraphLogitRows &&
                     out.hidden.size() <= std::size_t(Workspace::kGraphTapRows) * p.n_embd;
  float* const logits_dst = graph ? static_cast<float*>(ws.graph_outputs->data()) : out.logits.data();
  float* const hidden_dst = graph ? logits_dst + std::size_t(Workspace::kGraphLogitRows) * p.n_vocab : out.hidden.data();
  TokenId* const argmax_dst =
      graph ? reinterpret_cast<TokenId*>(hidden_dst + std::size_t(Workspace::kGraphTapRows) * p.n_embd) : out.argmax.data();
  TokenId* const candidate_ids_dst = graph ? argmax_dst + Workspace::kGraphLogitRows : out.candidate_ids.data();
  float* const candidate_logits_dst =
      graph ? reinterpret_cast<float*>(candidate_ids_dst + std::size_t(Workspace::kGraphLogitRows) * kMaxCandidates)
            : out.candidate_logits.data();
  const MemoryKind out_memory = graph ? MemoryKind::pinned_host : MemoryKind::host;
  // Copies x (the input of layer `id`, or the output when id == n_layers) to every tap asking for it.
  auto tap = [&](std::uint32_t id) -> Status {
    for (std::size_t t = 0; t < batch.hidden_layers.size(); ++t)
      if (static_cast<std::uint32_t>(batch.hidden_layers[t]) == id) {
        if (batch.hidden_on_host) GRAFT_TRY(copy_rows_out(ws.x, n, hidden_dst + t * block, out_memory));
        if (hidden_dev) GRAFT_TRY(copy_rows_out(ws.x, n, hidden_dev + t * block, MemoryKind::device));
      }
    return Status::success();
  };
  bool capturing = false;

  // Recurrent states: a token tree's rows each follow their parent (the deepest of the ancestors
  // its mask names), and the state keeps them; a chain moves the state on, and so does a deferred
  // path (applied by each layer), so the state is unknown until the pass is through.
  if (needs_.delta_net) {
    ws.parents.resize(n);
    std::uint32_t r0 = 0;
    for (const SequenceRows& s : batch.sequences) {
      if (s.ancestor) {
        const std::uint32_t m = s.n_tokens;
        for (std::uint32_t t = 0; t < m; ++t) {
          std::int32_t parent = -1;
          for (std::uint32_t j = 0; j < t; ++j)
            if (s.ancestor[std::size_t(t) * m + j]) parent = static_cast<std::int32_t>(j);
          ws.parents[r0 + t] = parent;
          // Attention reads the mask, the delta-net the parents: they must say the same (row t sees
          // itself and exactly what its parent sees).
          for (std::uint32_t j = 0; j < m; ++j) {
            const bool sees = s.ancestor[std::size_t(t) * m + j] != 0;
            const bool should = j == t || (parent >= 0 && s.ancestor[std::size_t(parent) * m + j] != 0);
            if (sees != should)
              return Status(Errc::invalid_argument,
                            fmt::format("forward: the ancestor mask is not a tree in order at row {} (a hybrid "
                                        "model's rows must each see themselves and exactly their parent's rows)",
                                        t));
          }
        }
      }
      r0 += s.n_tokens;
    }
    // Every mask is a tree: now the states change.
    r0 = 0;
    for (const SequenceRows& s : batch.sequences) {
      if (s.ancestor) {
        s.state->set_pending(std::span<const std::int32_t>(ws.parents).subspan(r0, s.n_tokens));
        if (!s.state->deferred().empty()) s.state->set_position(RecurrentState::kUnknown);
      } else {
        s.state->clear_pending();
        s.state->set_position(RecurrentState::kUnknown);
      }
      r0 += s.n_tokens;
    }
  }
  // x [E, n] = token embeddings, then every layer in turn.
  Status st = [&]() -> Status {
    // The pass's index arrays go to backend memory in one copy: ids, positions, and each tree's
    // mask and (for the delta-net layers) parents (computed above); the sequences as the kernels
    // see them.
    GRAFT_TRY(ws.inputs->begin());
    std::vector<SequenceRows> seqs(batch.sequences.begin(), batch.sequences.end());
    auto ids = ws.inputs->add(batch.tokens);
    if (!ids) return std::move(ids).status();
    auto pos = ws.inputs->add(positions);
    if (!pos) return std::move(pos).status();
    {
      std::uint32_t r0 = 0;
      for (SequenceRows& s : seqs) {
        if (s.ancestor) {
          auto mask = ws.inputs->add_mask(s.ancestor, s.n_tokens);
          if (!mask) return std::move(mask).status();
          s.mask = *mask;
          if (needs_.delta_net) {
            auto parents = ws.inputs->add(std::span<const std::int32_t>(ws.parents).subspan(r0, s.n_tokens));
            if (!parents) return std::move(parents).status();
            s.parents = *parents;
          }
        }
        r0 += s.n_tokens;
      }
    }
    if (graph) {
      // From here to the head, everything is enqueued work: captured, then launched as one.
      GRAFT_TRY(backend_->begin_capture());
      capturing = true;
      GRAFT_TRY(ws.inputs->upload_captured());
    } else {
      GRAFT_TRY(ws.inputs->upload());
    }
    GRAFT_TRY(embed(ws, *ids));
    std::uint32_t kv_layer = 0, state_layer = 0;  // the KV stores hold the attention layers, the states the others
    for (std::uint32_t il = 0; il < n_layers; ++il) {
      GRAFT_TRY(tap(il));
      const LayerWeights& L = weights_.layers[il];
      GRAFT_TRY(layer(ws, L, L.kind == LayerKind::delta_net ? state_layer++ : kv_layer++, seqs, *pos, n));
    }
    return tap(n_layers);
  }();
  if (needs_.delta_net)
    for (const SequenceRows& s : batch.sequences) {
      s.state->clear_deferred();  // applied by every layer, or the state is unknown
      if (st.ok()) s.state->set_position(s.ancestor ? s.n_past : s.n_past + s.n_tokens);
      if (s.ancestor && !st.ok()) s.state->clear_pending();
    }
  if (st.ok() && batch.hidden_normed_output) {
    st = backend_->rms_norm(device_f32(ws.x, p.n_embd, n), weights_.output_norm.view, p.rms_eps, device_f32(ws.h, p.n_embd, n));
    if (st.ok() && batch.hidden_on_host)
      st = copy_rows_out(ws.h, n, hidden_dst + batch.hidden_layers.size() * block, out_memory);
    if (st.ok() && hidden_dev) st = copy_rows_out(ws.h, n, hidden_dev + batch.hidden_layers.size() * block, MemoryKind::device);
  }
  // logits of the chosen rows only, the greedy ids of others, the best candidates of others.
  if (st.ok()) st = head(ws, batch.logit_rows, logits_dst, out_memory);
  if (st.ok()) st = head_top_k(ws, batch.argmax_rows, 1, argmax_dst, nullptr, out_memory);
  if (st.ok())
    st = head_top_k(ws, batch.candidate_rows, batch.candidates, candidate_ids_dst, candidate_logits_dst, out_memory);
  if (capturing) {
    // One graph per shape of pass: the same launches as the last pass of this shape, with other
    // pointers and sizes, update it in place. A failed capture is dropped, never launched.
    std::unique_ptr<Graph> dropped;
    std::unique_ptr<Graph>& g = st.ok() ? ws.graphs[graph_key(batch)] : dropped;
    Status captured = backend_->end_capture(g);
    if (st.ok()) st = captured;
    if (st.ok()) st = g->launch();
    if (st.ok()) ++ws.graph_launches;
  }
  // The one wait of the pass: its outputs are on the host after it. Also after a failure, so no
  // copy still in flight writes into `out` after the caller has moved on.
  Status done = backend_->synchronize();
  if (st.ok() && done.ok() && graph) {
    std::copy_n(logits_dst, out.logits.size(), out.logits.data());
    std::copy_n(hidden_dst, out.hidden.size(), out.hidden.data());
    std::copy_n(argmax_dst, out.argmax.size(), out.argmax.data());
    std::copy_n(candidate_ids_dst, n_candidates, out.candidate_ids.data());
    std::copy_n(candidate_logits_dst, n_candidates, out.candidate_logits.data());
  }
  return st.ok() ? done : st;
}

Status Model::forward(Workspace& ws, KvStore& kv, const SequenceBatch& batch, std::vector<float>& logits) const {
  const auto n = static_cast<std::uint32_t>(batch.tokens.size());
  const SequenceRows seq{&kv, n, batch.n_past, batch.ancestor, batch.state};
  std::vector<std::uint32_t> rows(batch.all_logits ? n : std::min<std::uint32_t>(n, 1));
  std::iota(rows.begin(), rows.end(), batch.all_logits ? 0u : n - 1);
  ForwardBatch fb;
  fb.tokens = batch.tokens;
  fb.positions = batch.positions;
  fb.sequences = std::span<const SequenceRows>(&seq, 1);
  fb.logit_rows = rows;
  ForwardOutput out;
  out.logits = std::move(logits);  // reuse the caller's allocation
  Status st = forward(ws, fb, out);
  logits = std::move(out.logits);
  return st;
}

}  // namespace graft
