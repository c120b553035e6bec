#include "model/model_weights.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <set>
#include <string>

namespace graft {

namespace {

class Binder {
 public:
  Binder(const gguf::File& f, const HostServices& host, std::string_view backend)
      : f_(f), host_(host), backend_(backend) {}

  Status matrix(const std::string& name, std::uint64_t k, std::uint64_t m, MatrixWeight& out) {
    used_.insert(name);
    const gguf::TensorInfo* t = f_.tensor(name);
    if (!t) return Status(Errc::invalid_argument, fmt::format("{}: missing tensor '{}'", f_.name(), name));
    if (t->n_dims != 2 || t->ne[0] != k || t->ne[1] != m)
      return Status(Errc::invalid_argument, fmt::format("{}: tensor '{}' has shape [{}, {}], expected [{}, {}]", f_.name(),
                                                        name, t->ne[0], t->ne[1], k, m));
    const WeightFormat* format = host_.weight_format(t->type);
    if (!format)
      return Status(Errc::unsupported,
                    fmt::format("{}: tensor '{}' has type id {} and no weight-format plugin for it is loaded "
                                "(graft plugins lists what is installed)",
                                f_.name(), name, t->type));
    FormatKernels* kernels = format->kernels(backend_);
    const char* type_name = "?";
    std::uint32_t block_bytes = 0;
    for (const auto& tt : format->types())
      if (tt.id == t->type) type_name = tt.name, block_bytes = tt.block_bytes;
    if (!kernels)
      return Status(Errc::unsupported, fmt::format("{}: tensor '{}': weight format {} has no kernels for backend '{}'",
                                                   f_.name(), name, type_name, backend_));
    const std::int64_t ne[4] = {static_cast<std::int64_t>(k), static_cast<std::int64_t>(m), 1, 1};
    GRAFT_TRY(format->check_tensor(t->type, ne, 2, t->bytes));
    out.name = name;
    out.kernels = kernels;
    out.bytes = t->bytes;
    out.view = weight_view(*t, block_bytes);
    return Status::success();
  }

  Status vector(const std::string& name, std::uint64_t n, VectorWeight& out) {
    used_.insert(name);
    const gguf::TensorInfo* t = f_.tensor(name);
    if (!t) return Status(Errc::invalid_argument, fmt::format("{}: missing tensor '{}'", f_.name(), name));
    if (t->elements() != n)
      return Status(Errc::invalid_argument,
                    fmt::format("{}: tensor '{}' has {} elements, expected {}", f_.name(), name, t->elements(), n));
    out.name = name;
    if (t->type == type_id::f32) {
      out.view = f32_view(const_cast<float*>(reinterpret_cast<const float*>(t->data)), static_cast<std::int64_t>(n));
      return Status::success();
    }
    const WeightFormat* format = host_.weight_format(t->type);
    if (!format)
      return Status(Errc::unsupported, fmt::format("{}: tensor '{}' has type id {} and no weight-format plugin for it",
                                                   f_.name(), name, t->type));
    out.owned.resize(n);
    GRAFT_TRY(format->dequantize(t->type, t->data, out.owned.data(), static_cast<std::int64_t>(n)));
    out.view = f32_view(out.owned.data(), static_cast<std::int64_t>(n));
    return Status::success();
  }

 private:
  const gguf::File& f_;
  const HostServices& host_;
  std::string backend_;

 public:
  // A tensor the forward pass would not read means the file describes a model this implementation
  // computes differently (biases, RoPE frequency factors, ...): refuse rather than answer wrongly.
  // Blocks after the main layers (MTP heads) belong to drafters and are allowed.
  Status check_all_used(const ModelParams& p) const {
    for (const auto& t : f_.tensors()) {
      if (used_.count(t.name)) continue;
      unsigned block = 0;
      if (std::sscanf(t.name.c_str(), "blk.%u.", &block) == 1 && block >= p.n_main_layers() && block < p.n_layer)
        continue;
      std::string why = "graft's " + p.arch_name + " forward pass does not use it";
      if (t.name == "rope_freqs.weight") why = "RoPE frequency factors (llama3-style rope scaling) are not supported yet";
      else if (t.name.ends_with(".bias")) why = "biases are not supported by graft's " + p.arch_name + " forward pass";
      return Status(Errc::unsupported,
                    fmt::format("{}: tensor '{}' is not used: {}; refusing to run a model that would compute "
                                "differently from its definition",
                                f_.name(), t.name, why));
    }
    return Status::success();
  }

 private:
  std::set<std::string> used_;
};

// blk.<i>.* with the dimensions of p.
Status bind_block(Binder& b, const ModelParams& p, std::uint32_t i, LayerWeights& L) {
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

}  // namespace

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
                                          const Backend& backend) {
  Binder b(file, host, backend.name());
  ModelWeights w;
  GRAFT_TRY(b.matrix("token_embd.weight", p.n_embd, p.n_vocab, w.token_embd));
  GRAFT_TRY(b.vector("output_norm.weight", p.n_embd, w.output_norm));
  if (p.tied_output) {
    w.output = w.token_embd;
  } else {
    GRAFT_TRY(b.matrix("output.weight", p.n_embd, p.n_vocab, w.output));
  }
  w.layers.resize(p.n_main_layers());
  for (std::uint32_t i = 0; i < p.n_main_layers(); ++i) GRAFT_TRY(bind_block(b, p, i, w.layers[i]));
  // Decode reads one embedding row and all of every matrix it multiplies by.
  for (const MatrixWeight* m : w.matmul_weights()) w.total_bytes += m->bytes;
  GRAFT_TRY(b.check_all_used(p));
  return w;
}

Expected<LayerWeights> bind_layer(const gguf::File& file, const ModelParams& p, std::uint32_t index,
                                  const HostServices& host, const Backend& backend) {
  Binder b(file, host, backend.name());
  LayerWeights L;
  GRAFT_TRY(bind_block(b, p, index, L));
  return L;
}

Expected<MatrixWeight> bind_matrix(const gguf::File& file, std::string_view name, const HostServices& host,
                                   const Backend& backend) {
  const gguf::TensorInfo* t = file.tensor(name);
  if (!t) return Status(Errc::not_found, fmt::format("{}: missing tensor '{}'", file.name(), name));
  if (t->n_dims != 2)
    return Status(Errc::invalid_argument, fmt::format("{}: tensor '{}' has {} dimensions, expected a matrix", file.name(),
                                                      name, t->n_dims));
  Binder b(file, host, backend.name());
  MatrixWeight w;
  GRAFT_TRY(b.matrix(std::string(name), t->ne[0], t->ne[1], w));
  return w;
}

Expected<VectorWeight> bind_vector(const gguf::File& file, std::string_view name, const HostServices& host,
                                   const Backend& backend) {
  const gguf::TensorInfo* t = file.tensor(name);
  if (!t) return Status(Errc::not_found, fmt::format("{}: missing tensor '{}'", file.name(), name));
  Binder b(file, host, backend.name());
  VectorWeight w;
  GRAFT_TRY(b.vector(std::string(name), t->elements(), w));
  return w;
}

std::vector<MatrixWeight*> ModelWeights::matmul_weights() {
  std::vector<MatrixWeight*> out;
  for (auto& L : layers) {
    if (L.qkv_stacked())
      out.push_back(&L.wqkv);
    else
      out.insert(out.end(), {&L.wq, &L.wk, &L.wv});
    out.push_back(&L.wo);
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
