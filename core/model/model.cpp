// Loading a Model: hyperparameters, tokenizer, weights bound to kernels, stacked and prepared.
#include "model/model.hpp"

#include <fmt/format.h>

#include <span>
#include <tuple>
#include <utility>

#include "model/stacked_matrix.hpp"

namespace graft {

Model::~Model() = default;

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
  // A matrix the forward pass no longer reads from the file: its pages go back to the system and
  // the load-time prefault skips it.
  auto release_file_pages = [&](const void* view_data, std::uint64_t bytes) {
    const auto* data = static_cast<const std::uint8_t*>(view_data);
    W.released_bytes += m->file_->release(data, bytes);
    W.released.push_back(data);
  };
  m->graphs_ = options.graphs;
  if (options.fuse_projections) {
    for (std::uint32_t il = 0; il < m->params_.n_main_layers(); ++il) {
      LayerWeights& L = W.layers[il];
      const MatrixWeight* qkv[] = {&L.wq, &L.wk, &L.wv};
      const MatrixWeight* gate_up[] = {&L.w_gate, &L.w_up};
      for (auto [parts, out, name] : {std::tuple{std::span<const MatrixWeight* const>(qkv), &L.wqkv, "attn_q+k+v"},
                                      std::tuple{std::span<const MatrixWeight* const>(gate_up), &L.w_gate_up, "ffn_gate+up"}}) {
        // A gated query projection (query | gate per head) stays apart from k and v; a delta-net has none.
        if (out == &L.wqkv && L.kind != LayerKind::attention) continue;
        auto stacked = stack_rows(parts, fmt::format("blk.{}.{}", il, name));
        if (!stacked) return std::move(stacked).status();
        if (!stacked->kernels) continue;  // types differ: the parts stay separate
        *out = std::move(*stacked);
        for (const MatrixWeight* part : parts) release_file_pages(part->view.data, part->bytes);  // read stacked only
      }
    }
  }
  // Kernels that read their own layout get it now, once (the file's bytes stay mapped for the
  // rest: norms, token rows, and matrices whose kernels read them as they are). The file's pages of
  // a prepared matrix are then released, so the weights are not held twice (a tied output keeps
  // them: its rows are the token embeddings).
  for (MatrixWeight* w : W.matmul_weights()) {
    std::unique_ptr<PreparedWeights> prepared;
    if (Status st = w->kernels->prepare(*m->backend_, w->view, prepared); !st.ok())
      return Status(st.code(), fmt::format("{}: {}", w->name, st.message()));
    if (prepared) {
      W.prepared_bytes += prepared->bytes();
      if (w->storage)
        w->storage->release();  // a stacked copy, read no more
      else if (w->view.data != W.token_embd.view.data)
        release_file_pages(w->view.data, w->bytes);
    } else if (w->storage) {
      W.prepared_bytes += w->bytes;
    }
    w->prepared = std::move(prepared);
  }
  // The embedding table: a tied one is the lm_head's prepared copy; an untied one is read from the
  // file where the backend reads host memory (the CPU), else it is uploaded (prepared) too.
  if (W.output.view.data == W.token_embd.view.data) {
    W.token_embd.prepared = W.output.prepared;
  } else if (!m->backend_->host_accessible(MemoryKind::device)) {
    std::unique_ptr<PreparedWeights> prepared;
    if (Status st = W.token_embd.kernels->prepare(*m->backend_, W.token_embd.view, prepared); !st.ok())
      return Status(st.code(), fmt::format("{}: {}", W.token_embd.name, st.message()));
    if (prepared) {
      W.prepared_bytes += prepared->bytes();
      release_file_pages(W.token_embd.view.data, W.token_embd.bytes);
    }
    W.token_embd.prepared = std::move(prepared);
  }
  for (const LayerWeights& L : W.layers) {
    if (L.kind == LayerKind::gated_attention) m->any_gated_ = true;
    if (L.kind == LayerKind::delta_net) m->any_delta_net_ = true;
    (L.qkv_stacked() ? m->any_qkv_stacked_ : m->any_qkv_split_) = true;
    (L.gate_up_stacked() ? m->any_gate_up_stacked_ : m->any_gate_up_split_) = true;
  }
  m->block_ = std::make_unique<DecoderBlock>(*m->backend_, m->params_);
  m->view_ = m->bind_view(host);
  return std::shared_ptr<const Model>(std::move(m));
}

KvGeometry Model::kv_geometry(std::uint32_t capacity) const { return params_.kv_geometry(capacity); }

WorkspaceNeeds Model::workspace_needs() const {
  return WorkspaceNeeds{.qkv_stacked = any_qkv_stacked_,
                        .qkv_split = any_qkv_split_,
                        .gate_up_stacked = any_gate_up_stacked_,
                        .gate_up_split = any_gate_up_split_,
                        .gated_q = any_gated_,
                        .delta_net = any_delta_net_,
                        .logit_rows = kLogitRows};
}

std::uint64_t Model::workspace_bytes(std::uint32_t max_batch) const {
  return Workspace::bytes_for(params_, workspace_needs(), max_batch);
}

Expected<std::unique_ptr<RecurrentState>> Model::new_recurrent_state(std::uint32_t max_pending) const {
  if (!any_delta_net_) return std::unique_ptr<RecurrentState>();
  return RecurrentState::create(*backend_, params_, max_pending);
}

Expected<std::unique_ptr<Workspace>> Model::new_workspace(std::uint32_t max_batch) const {
  return Workspace::create(*backend_, params_, workspace_needs(), max_batch);
}

}  // namespace graft
