// A loaded model: the GGUF file, its hyperparameters and tokenizer, its weights bound to the
// weight-format kernels of one backend (stacked and prepared once at load), and the forward pass.
// Immutable after load and shared by every Session over it: each sequence brings its own KV store
// and Workspace, so any number of sequences run over one copy of the weights.
//
// The forward pass is written once against the SDK interfaces (generic ops from the backend,
// matmuls from weight-format kernels, attention from the KV store) and serves prefill, decode,
// token-tree verification and batches of several sequences. Its steps are public (embed, layer,
// head) so drafters and batching reuse them instead of re-implementing attention or matmul.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "graft/backend.hpp"
#include "graft/host.hpp"
#include "graft/kv_store.hpp"
#include "graft/model_view.hpp"
#include "gguf/gguf_file.hpp"
#include "model/decoder_block.hpp"
#include "model/forward_batch.hpp"
#include "model/model_params.hpp"
#include "model/model_weights.hpp"
#include "model/recurrent_state.hpp"
#include "model/workspace.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft {

// A model's weights in memory as loading makes them, counted before loading (Model::plan_weights):
// the file's tensor bytes (the load reads each once), the copies loading makes (kernel layouts,
// uploads, stacked q/k/v and gate/up) and, of the file's bytes, those no longer read once the
// copies exist (their pages are given back). Resident: file_bytes - released_bytes + prepared_bytes.
struct WeightsPlan {
  std::uint64_t file_bytes = 0;
  std::uint64_t prepared_bytes = 0;
  std::uint64_t released_bytes = 0;
  WorkspaceNeeds needs;  // the buffers the forward pass will need
};

struct ModelOptions {
  // Stack q/k/v and gate/up into one matrix each where their types agree (stacked_matrix.hpp):
  // the same logits, bit for bit, with three fewer matmul calls per layer. Off only to compare.
  bool fuse_projections = true;
  // On a backend with graphs (CUDA), capture each forward pass and launch it as one graph, updated
  // in place from one pass of a shape to the next: the same results with one launch instead of
  // hundreds. Off only to compare.
  bool graphs = true;
};

// One sequence's forward pass, the common case (a Session's prefill, decode and verify).
struct SequenceBatch {
  std::span<const TokenId> tokens;
  std::span<const std::int32_t> positions;  // empty: n_past + i; a token tree: n_past + depth
  std::uint32_t n_past = 0;                 // tokens already in the KV store
  const std::uint8_t* ancestor = nullptr;   // n x n ancestor mask (AttentionBatch); null: causal
  bool all_logits = false;                  // false: only the last row's logits
  RecurrentState* state = nullptr;          // a hybrid model's: SequenceRows::state
};

class Model {
 public:
  // Output rows per lm_head matmul: bounds the logits scratch (n_vocab is up to ~256K).
  static constexpr std::uint32_t kLogitRows = 16;

  // Keeps `file` (the mapping the weights point into), the backend and `plugins` alive as long as
  // the Model: `plugins` holds the weight-format libraries loaded (prepared weights are their
  // memory) and `host`. Errors name the file and tensor.
  static Expected<std::shared_ptr<const Model>> load(std::shared_ptr<const gguf::File> file,
                                                     std::shared_ptr<Backend> backend,
                                                     const HostServices& host, std::shared_ptr<const void> plugins,
                                                     const ModelOptions& options = {});
  // What load() would hold, from the file's tensors and the kernels' prepared_bytes alone: nothing
  // is copied or prepared (the same code decides, so the figures are load()'s; tested).
  static Expected<WeightsPlan> plan_weights(const gguf::File& file, const HostServices& host, Backend& backend,
                                            const ModelOptions& options = {});
  ~Model();
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const ModelParams& params() const { return params_; }
  const ModelWeights& weights() const { return weights_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const gguf::File& file() const { return *file_; }
  const std::shared_ptr<const gguf::File>& shared_file() const { return file_; }
  Backend& backend() const { return *backend_; }
  const std::shared_ptr<Backend>& shared_backend() const { return backend_; }
  // The decoder block code the forward pass runs (drafters run theirs through it too).
  const DecoderBlock& block() const { return *block_; }
  // What plugins (drafters) see of this model; lives as long as the Model.
  const ModelView& view() const { return *view_; }
  KvGeometry kv_geometry(std::uint32_t capacity) const;

  // Scratch for forward passes of up to max_batch rows (several sessions may share one when they
  // never run forward passes at the same time).
  Expected<std::unique_ptr<Workspace>> new_workspace(std::uint32_t max_batch) const;
  // The bytes new_workspace(max_batch) allocates.
  std::uint64_t workspace_bytes(std::uint32_t max_batch) const;

  // The whole pass over a batch of one or several sequences (forward_batch.hpp).
  Status forward(Workspace& ws, const ForwardBatch& batch, ForwardOutput& out) const;
  // One sequence: logits of the last row, or of every row, appended to `logits` after clearing it.
  Status forward(Workspace& ws, KvStore& kv, const SequenceBatch& batch, std::vector<float>& logits) const;

  // ---- the steps of forward(), for drafters and batching ----
  // ws.x [rows, n_embd] = the token embeddings of ids (i32 [rows] in backend memory).
  Status embed(Workspace& ws, const TensorView& ids) const;
  // ws.x += one transformer block over every row: L's weights, its K/V in layer `slot` of each
  // sequence's store (a delta-net: layer `slot` of each sequence's recurrent state). positions:
  // i32 [rows] in backend memory; the sequences' masks and parents there too.
  Status layer(Workspace& ws, const LayerWeights& L, std::uint32_t slot, std::span<const SequenceRows> seqs,
               const TensorView& positions, std::uint32_t rows) const;
  // After a pass over a token tree: state moves on past `rows` of it (a path from the root,
  // ascending), bit for bit as if they had been decoded one at a time. Deferred: the next pass
  // applies the path to each layer just before reading it (or settle_recurrent, now); position()
  // counts it at once. An empty path drops the kept rows; rows that are not a path of the kept
  // tree are refused and change nothing.
  Status commit_recurrent(RecurrentState& state, std::span<const std::uint32_t> rows) const;
  // Applies a deferred path to every layer now (for a copy of the state, or to read it).
  Status settle_recurrent(RecurrentState& state) const;
  // The state a sequence of this model needs (null when it has no delta-net layers), keeping the
  // rows of token trees of up to max_pending rows.
  Expected<std::unique_ptr<RecurrentState>> new_recurrent_state(std::uint32_t max_pending) const;
  bool hybrid() const { return needs_.delta_net; }
  // logits [rows.size(), n_vocab] (host memory) = lm_head(output_norm(ws.x[row])) for the chosen rows.
  // Overwrites ws.h. Enqueued: the logits are there after the backend's next synchronize().
  Status head(Workspace& ws, std::span<const std::uint32_t> rows, float* logits, MemoryKind logits_memory) const;
  // ids and logits [rows.size(), k] (host or pinned memory; logits may be null) = the k best
  // entries of each chosen row's logits, best first (the larger, the lower id among equal ones, NaN
  // last), picked on the backend: only they travel (k = 1: the greedy choice). Overwrites ws.h and
  // ws.logits. Enqueued like head().
  Status head_top_k(Workspace& ws, std::span<const std::uint32_t> rows, std::uint32_t k, TokenId* ids, float* logits,
                    MemoryKind out_memory) const;

 private:
  Model() = default;
  Status matmul(const MatrixWeight& w, float* x, std::uint32_t n, float* y) const;
  // ws.logits [V, rows.size()] = lm_head(output_norm(ws.x[row])), at most kLogitRows rows.
  Status head_chunk(Workspace& ws, std::span<const std::uint32_t> rows) const;
  Status copy_rows_out(const float* src, std::uint32_t rows, float* dst, MemoryKind dst_memory) const;
  std::unique_ptr<ModelView> bind_view(const HostServices& host) const;
  WorkspaceNeeds workspace_needs() const;

  std::shared_ptr<const gguf::File> file_;
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<const void> plugins_;
  std::unique_ptr<Tokenizer> tokenizer_;
  ModelParams params_;
  ModelWeights weights_;
  std::unique_ptr<DecoderBlock> block_;
  std::unique_ptr<ModelView> view_;
  WorkspaceNeeds needs_;  // which buffers the layers need (stacked or split projections, gates, delta-net)
  bool graphs_ = true;  // ModelOptions::graphs
};

}  // namespace graft
