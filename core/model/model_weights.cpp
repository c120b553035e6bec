#include "model/model_weights.hpp"

#include <fmt/format.h>

#include <string>

#include "model/tensor_binder.hpp"

namespace graft {

Status bind_attention_layer(TensorBinder& b, const ModelParams& p, std::uint32_t i, LayerWeights& L) {
  const std::uint64_t q_dim = std::uint64_t(p.n_head) * p.head_dim, kv_dim = std::uint64_t(p.n_head_kv) * p.head_dim;
  const std::string pre = fmt::format("blk.{}.", i);
  GRAFT_TRY(b.vector(pre + "attn_norm.weight", p.n_embd, L.attn_norm));
  GRAFT_TRY(b.matrix(pre + "attn_q.weight", p.n_embd, q_dim, L.wq));
  GRAFT_TRY(b.matrix(pre + "attn_k.weight", p.n_embd, kv_dim, L.wk));
  GRAFT_TRY(b.matrix(pre + "attn_v.weight", p.n_embd, kv_dim, L.wv));
  GRAFT_TRY(b.matrix(pre + "attn_output.weight", q_dim, p.n_embd, L.wo));
  if (p.qk_norm) {
    GRAFT_TRY(b.vector(pre + "attn_q_norm.weight", p.head_dim, L.q_norm));
    GRAFT_TRY(b.vector(pre + "attn_k_norm.weight", p.head_dim, L.k_norm));
  }
  GRAFT_TRY(b.vector(pre + "ffn_norm.weight", p.n_embd, L.ffn_norm));
  GRAFT_TRY(b.matrix(pre + "ffn_gate.weight", p.n_embd, p.n_ff, L.w_gate));
  GRAFT_TRY(b.matrix(pre + "ffn_up.weight", p.n_embd, p.n_ff, L.w_up));
  GRAFT_TRY(b.matrix(pre + "ffn_down.weight", p.n_ff, p.n_embd, L.w_down));
  return Status::success();
}

TensorView weight_view(const gguf::TensorInfo& t, std::uint32_t block_bytes) {
  TensorView v;
  v.data = const_cast<std::uint8_t*>(t.data);  // read-only mapping; kernels never write weights
  v.type = t.type;
  v.n_dims = static_cast<std::int32_t>(t.n_dims);
  for (int i = 0; i < 4; ++i) v.ne[i] = static_cast<std::int64_t>(t.ne[i]);
  const std::size_t row = t.bytes / static_cast<std::size_t>(t.ne[1] * t.ne[2] * t.ne[3]);
  v.nb = {block_bytes, row, row * t.ne[1], row * t.ne[1] * t.ne[2]};
  v.memory = MemoryKind::host;
  return v;
}

Expected<ModelWeights> ModelWeights::bind(const gguf::File& file, const ModelParams& p, const HostServices& host,
                                          Backend& backend, bool upload) {
  TensorBinder b(file, host, backend, upload);
  ModelWeights w;
  GRAFT_TRY(b.matrix("token_embd.weight", p.n_embd, p.n_vocab, w.token_embd));
  GRAFT_TRY(b.vector("output_norm.weight", p.n_embd, w.output_norm));
  if (p.tied_output) {
    w.output = w.token_embd;
  } else {
    GRAFT_TRY(b.matrix("output.weight", p.n_embd, p.n_vocab, w.output));
  }
  w.layers.resize(p.n_main_layers());
  for (std::uint32_t i = 0; i < p.n_main_layers(); ++i) GRAFT_TRY(p.arch->bind_layer(b, p, i, w.layers[i]));
  // Decode reads one embedding row and all of every matrix it multiplies by.
  for (const MatrixWeight* m : w.matmul_weights()) w.total_bytes += m->bytes;
  GRAFT_TRY(b.check_all_used(p));
  return w;
}

Expected<LayerWeights> bind_layer(const gguf::File& file, const ModelParams& p, std::uint32_t index,
                                  const HostServices& host, Backend& backend, bool upload) {
  TensorBinder b(file, host, backend, upload);
  LayerWeights L;
  GRAFT_TRY((p.arch ? p.arch->bind_layer : bind_attention_layer)(b, p, index, L));
  return L;
}

Expected<MatrixWeight> bind_matrix(const gguf::File& file, std::string_view name, const HostServices& host,
                                   Backend& backend) {
  const gguf::TensorInfo* t = file.tensor(name);
  if (!t) return Status(Errc::not_found, fmt::format("{}: missing tensor '{}'", file.name(), name));
  if (t->n_dims != 2)
    return Status(Errc::invalid_argument, fmt::format("{}: tensor '{}' has {} dimensions, expected a matrix", file.name(),
                                                      name, t->n_dims));
  TensorBinder b(file, host, backend);
  MatrixWeight w;
  GRAFT_TRY(b.matrix(std::string(name), t->ne[0], t->ne[1], w));
  return w;
}

Expected<VectorWeight> bind_vector(const gguf::File& file, std::string_view name, const HostServices& host,
                                   Backend& backend) {
  const gguf::TensorInfo* t = file.tensor(name);
  if (!t) return Status(Errc::not_found, fmt::format("{}: missing tensor '{}'", file.name(), name));
  TensorBinder b(file, host, backend);
  VectorWeight w;
  GRAFT_TRY(b.vector(std::string(name), t->elements(), w));
  return w;
}

std::vector<MatrixWeight*> ModelWeights::matmul_weights() {
  std::vector<MatrixWeight*> out;
  for (auto& L : layers) {
    if (L.kind == LayerKind::delta_net) {
      out.insert(out.end(), {&L.ssm_in, &L.ssm_gate, &L.ssm_beta, &L.ssm_alpha, &L.ssm_out});
    } else {
      if (L.qkv_stacked())
        out.push_back(&L.wqkv);
      else
        out.insert(out.end(), {&L.wq, &L.wk, &L.wv});
      out.push_back(&L.wo);
    }
    // The feed-forward of every kind of layer: stacked gate|up where the types allow it (a
    // delta-net layer's too: listing its parts instead prepared copies no pass reads, issue 37).
    if (L.gate_up_stacked())
      out.push_back(&L.w_gate_up);
    else
      out.insert(out.end(), {&L.w_gate, &L.w_up});
    out.push_back(&L.w_down);
  }
  out.push_back(&output);
  return out;
}

}  // namespace graft
