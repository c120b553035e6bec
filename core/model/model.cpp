// Loading a Model: hyperparameters, tokenizer, weights bound to kernels, stacked and prepared.
#include "model/model.hpp"

#include <fmt/format.h>

#include <span>
#include <tuple>
#include <utility>

#include "model/stacked_matrix.hpp"

namespace graft {

Model::~Model() = default;

namespace {

// What loading does to bound weights, once for Model::load and once for Model::plan_weights: q/k/v
// and gate/up stacked where their types agree, each matrix's kernel copy made where its kernels
// have a layout of their own, and the file's pages of what is no longer read given back. `dry`:
// nothing is copied, prepared or released; the same decisions are only counted
// (FormatKernels::prepared_bytes for prepare, stacked_shape for stack_rows, File::releasable for
// release), so the planner's figures are the loader's by construction.
Status place_weights(ModelWeights& W, Backend& backend, const gguf::File& file, bool dry, const ModelOptions& options,
                     WeightsPlan& plan) {
  // A matrix the forward pass no longer reads from the file: its pages go back to the system and
  // the load-time prefault skips it.
  auto release_file_pages = [&](const void* view_data, std::uint64_t bytes) {
    const auto* data = static_cast<const std::uint8_t*>(view_data);
    if (dry) {
      plan.released_bytes += file.releasable(data, bytes);
      return;
    }
    const std::uint64_t released = file.release(data, bytes);
    plan.released_bytes += released;
    W.released_bytes += released;
    W.released.push_back(data);
  };
  if (options.fuse_projections) {
    for (LayerWeights& L : W.layers) {
      const MatrixWeight* qkv[] = {&L.wq, &L.wk, &L.wv};
      const MatrixWeight* gate_up[] = {&L.w_gate, &L.w_up};
      for (auto [parts, out, name] : {std::tuple{std::span<const MatrixWeight* const>(qkv), &L.wqkv, "attn_q+k+v"},
                                      std::tuple{std::span<const MatrixWeight* const>(gate_up), &L.w_gate_up, "ffn_gate+up"}}) {
        // A gated query projection (query | gate per head) stays apart from k and v; a delta-net has none.
        if (out == &L.wqkv && L.kind != LayerKind::attention) continue;
        const std::string stacked_name = fmt::format("blk.{}.{}", &L - W.layers.data(), name);
        MatrixWeight stacked;
        if (dry) {
          stacked = stacked_shape(parts, stacked_name);
        } else {
          auto made = stack_rows(parts, stacked_name);
          if (!made) return std::move(made).status();
          stacked = std::move(*made);
        }
        if (!stacked.kernels) continue;  // types differ: the parts stay separate
        *out = std::move(stacked);
        for (const MatrixWeight* part : parts) release_file_pages(part->view.data, part->bytes);  // read stacked only
      }
    }
  }
  // Kernels that read their own layout get it now, once (the file's bytes stay mapped for the
  // rest: norms, token rows, and matrices whose kernels read them as they are). The file's pages of
  // a prepared matrix are then released, so the weights are not held twice (a tied output keeps
  // them: its rows are the token embeddings).
  auto prepare = [&](MatrixWeight& w) -> Expected<std::uint64_t> {
    if (dry) return w.kernels->prepared_bytes(backend, w.view);
    std::unique_ptr<PreparedWeights> prepared;
    if (Status st = w.kernels->prepare(backend, w.view, prepared); !st.ok())
      return Status(st.code(), fmt::format("{}: {}", w.name, st.message()));
    const std::uint64_t bytes = prepared ? prepared->bytes() : 0;
    w.prepared = std::move(prepared);
    return bytes;
  };
  for (MatrixWeight* w : W.matmul_weights()) {
    const bool stacked = w->storage || !w->view.data;  // a dry stacked matrix has no bytes at all
    auto bytes = prepare(*w);
    if (!bytes) return std::move(bytes).status();
    if (*bytes > 0) {
      plan.prepared_bytes += *bytes;
      if (stacked) {
        if (w->storage) w->storage->release();  // a stacked copy, read no more
      } else if (w->view.data != W.token_embd.view.data) {
        release_file_pages(w->view.data, w->bytes);
      }
    } else if (stacked) {
      plan.prepared_bytes += w->bytes;
    }
  }
  // The embedding table: a tied one is the lm_head's prepared copy; an untied one is read from the
  // file where the backend reads host memory (the CPU), else it is uploaded (prepared) too.
  if (W.output.view.data == W.token_embd.view.data) {
    W.token_embd.prepared = W.output.prepared;
  } else if (!backend.host_accessible(MemoryKind::device)) {
    auto bytes = prepare(W.token_embd);
    if (!bytes) return std::move(bytes).status();
    if (*bytes > 0) {
      plan.prepared_bytes += *bytes;
      release_file_pages(W.token_embd.view.data, W.token_embd.bytes);
    }
  }
  WorkspaceNeeds& n = plan.needs;
  n = WorkspaceNeeds{.qkv_split = false, .gate_up_split = false};
  for (const LayerWeights& L : W.layers) {
    if (L.kind == LayerKind::gated_attention) n.gated_q = true;
    if (L.kind == LayerKind::delta_net) n.delta_net = true;
    (L.qkv_stacked() ? n.qkv_stacked : n.qkv_split) = true;
    (L.gate_up_stacked() ? n.gate_up_stacked : n.gate_up_split) = true;
  }
  n.logit_rows = Model::kLogitRows;
  // The load touches every tensor of the file once (Pipeline's prefault, an MTP block's too) but
  // those whose pages were given back.
  plan.file_bytes = 0;
  for (const auto& t : file.tensors()) plan.file_bytes += t.bytes;
  return Status::success();
}

}  // namespace

Expected<WeightsPlan> Model::plan_weights(const gguf::File& file, const HostServices& host, Backend& backend,
                                          const ModelOptions& options) {
  auto params = ModelParams::from_gguf(file);
  if (!params) return std::move(params).status();
  auto weights = ModelWeights::bind(file, *params, host, backend, /*upload=*/false);
  if (!weights) return std::move(weights).status();
  WeightsPlan plan;
  GRAFT_TRY(place_weights(*weights, backend, file, /*dry=*/true, options, plan));
  return plan;
}

Expected<std::shared_ptr<const Model>> Model::load(std::shared_ptr<const gguf::File> file,
                                                   std::shared_ptr<Backend> backend,
                                                   const HostServices& host, std::shared_ptr<const void> plugins,
                                                   const ModelOptions& options) {
  auto params = ModelParams::from_gguf(*file);
  if (!params) return std::move(params).status();
  auto tokenizer = Tokenizer::from_gguf(*file);
  if (!tokenizer) return std::move(tokenizer).status();
  auto weights = ModelWeights::bind(*file, *params, host, *backend);
  if (!weights) return std::move(weights).status();
  if (params->n_vocab != (*tokenizer)->n_vocab())
    return Status(Errc::invalid_argument, fmt::format("{}: the vocabulary has {} tokens but token_embd has {} rows",
                                                      file->name(), (*tokenizer)->n_vocab(), params->n_vocab));

  std::shared_ptr<Model> m(new Model());
  m->file_ = std::move(file);
  m->backend_ = std::move(backend);
  m->plugins_ = std::move(plugins);
  m->tokenizer_ = std::move(*tokenizer);
  m->params_ = *params;
  m->weights_ = std::move(*weights);
  ModelWeights& W = m->weights_;
  m->graphs_ = options.graphs;
  WeightsPlan placed;
  GRAFT_TRY(place_weights(W, *m->backend_, *m->file_, /*dry=*/false, options, placed));
  W.prepared_bytes = placed.prepared_bytes;
  m->needs_ = placed.needs;
  m->block_ = std::make_unique<DecoderBlock>(*m->backend_, m->params_);
  m->view_ = m->bind_view(host);
  return std::shared_ptr<const Model>(std::move(m));
}

KvGeometry Model::kv_geometry(std::uint32_t capacity) const { return params_.kv_geometry(capacity); }

WorkspaceNeeds Model::workspace_needs() const { return needs_; }

std::uint64_t Model::workspace_bytes(std::uint32_t max_batch) const {
  return Workspace::bytes_for(params_, workspace_needs(), max_batch, backend_->graphs_supported());
}

Expected<std::unique_ptr<RecurrentState>> Model::new_recurrent_state(std::uint32_t max_pending) const {
  if (!needs_.delta_net) return std::unique_ptr<RecurrentState>();
  return RecurrentState::create(*backend_, params_, max_pending);
}

Expected<std::unique_ptr<Workspace>> Model::new_workspace(std::uint32_t max_batch) const {
  return Workspace::create(*backend_, params_, workspace_needs(), max_batch);
}

}  // namespace graft
