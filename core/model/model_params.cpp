#include "model/model_params.hpp"

#include <fmt/format.h>

#include "model/architecture.hpp"

namespace graft {

Status read_count(const gguf::File& f, const std::string& key, std::uint32_t& out, std::int64_t min, std::int64_t max) {
  auto v = f.get_int(key);
  if (!v) return Status(Errc::invalid_argument, fmt::format("{}: missing or non-integer metadata key '{}'", f.name(), key));
  if (*v < min || *v > max) return Status(Errc::invalid_argument, fmt::format("{}: {} = {} is out of range", f.name(), key, *v));
  out = static_cast<std::uint32_t>(*v);
  return Status::success();
}

std::uint32_t ModelParams::kv_layers() const {
  // A file read before its layer kinds (or made by hand) has only attention layers.
  if (layer_kinds.empty()) return n_main_layers();
  return count(LayerKind::attention) + count(LayerKind::gated_attention);
}

std::uint64_t ModelParams::recurrent_state_floats() const {
  const std::uint64_t per_layer = std::uint64_t(ssm_conv_kernel ? ssm_conv_kernel - 1 : 0) * ssm_channels() +
                                  std::uint64_t(ssm_state) * ssm_state * ssm_heads;
  return count(LayerKind::delta_net) * per_layer;
}

std::uint32_t ModelParams::count(LayerKind kind) const {
  std::uint32_t n = 0;
  for (LayerKind k : layer_kinds) n += k == kind ? 1 : 0;
  return n;
}

Expected<ModelParams> ModelParams::from_gguf(const gguf::File& f) {
  ModelParams p;
  auto arch = f.get_string("general.architecture");
  if (!arch) return Status(Errc::invalid_argument, f.name() + ": no general.architecture: not a model file");
  p.arch_name = *arch;
  p.arch = find_architecture(*arch);
  if (!p.arch)
    return Status(Errc::unsupported, fmt::format("{}: architecture '{}' is not supported (supported: {})", f.name(), *arch,
                                                 architecture_names()));
  p.arch->defaults(p);
  p.name = f.get_string("general.name").value_or(*arch);
  const std::string a = *arch + ".";

  auto need = [&](const std::string& key, std::uint32_t& out) { return read_count(f, a + key, out); };
  GRAFT_TRY(need("embedding_length", p.n_embd));
  GRAFT_TRY(need("block_count", p.n_layer));
  GRAFT_TRY(need("attention.head_count", p.n_head));
  GRAFT_TRY(need("feed_forward_length", p.n_ff));
  GRAFT_TRY(need("context_length", p.n_ctx_train));
  p.n_head_kv = p.n_head;
  if (f.find(a + "attention.head_count_kv")) GRAFT_TRY(need("attention.head_count_kv", p.n_head_kv));
  p.head_dim = p.n_embd / p.n_head;
  if (f.find(a + "attention.key_length")) GRAFT_TRY(need("attention.key_length", p.head_dim));
  if (auto vlen = f.get_int(a + "attention.value_length"); vlen && *vlen != p.head_dim)
    return Status(Errc::unsupported, fmt::format("{}: value_length {} differs from key_length {}: not supported",
                                                 f.name(), *vlen, p.head_dim));
  p.n_rot = p.head_dim;
  if (f.find(a + "rope.dimension_count")) GRAFT_TRY(need("rope.dimension_count", p.n_rot));
  if (p.n_rot > p.head_dim || p.n_rot % 2)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: rope.dimension_count {} must be even and at most head_dim {}", f.name(), p.n_rot, p.head_dim));
  if (p.n_head % p.n_head_kv)
    return Status(Errc::invalid_argument, fmt::format("{}: head_count {} is not a multiple of head_count_kv {}", f.name(),
                                                      p.n_head, p.n_head_kv));
  if (auto v = f.get_real(a + "rope.freq_base")) p.rope_freq_base = static_cast<float>(*v);
  if (auto v = f.get_real(a + "rope.scale_linear")) p.rope_freq_scale = 1.0f / static_cast<float>(*v);
  if (auto v = f.get_real(a + "rope.scaling.factor"); v && *v > 0) {
    const auto type = f.get_string(a + "rope.scaling.type").value_or("linear");
    if (type != "linear" && type != "none")
      return Status(Errc::unsupported, fmt::format("{}: rope scaling '{}' is not supported yet", f.name(), type));
    if (type == "linear") p.rope_freq_scale = 1.0f / static_cast<float>(*v);
  }
  if (auto v = f.get_real(a + "attention.layer_norm_rms_epsilon")) p.rms_eps = static_cast<float>(*v);
  if (auto v = f.get_int(a + "nextn_predict_layers"); v && *v > 0) {
    if (*v >= p.n_layer)
      return Status(Errc::invalid_argument, fmt::format("{}: nextn_predict_layers {} >= block_count {}", f.name(), *v, p.n_layer));
    p.n_nextn = static_cast<std::uint32_t>(*v);
  }
  // The vocabulary size comes from the embedding matrix, which every model has.
  const gguf::TensorInfo* embd = f.tensor("token_embd.weight");
  if (!embd) return Status(Errc::invalid_argument, f.name() + ": missing tensor 'token_embd.weight'");
  if (embd->n_dims != 2 || embd->ne[0] != p.n_embd)
    return Status(Errc::invalid_argument, fmt::format("{}: token_embd.weight has shape [{}, {}], expected [{}, n_vocab]",
                                                      f.name(), embd->ne[0], embd->ne[1], p.n_embd));
  p.n_vocab = static_cast<std::uint32_t>(embd->ne[1]);
  p.tied_output = f.tensor("output.weight") == nullptr;
  p.layer_kinds.assign(p.n_main_layers(), LayerKind::attention);
  if (p.arch->read_params) GRAFT_TRY(p.arch->read_params(f, p));
  return p;
}

}  // namespace graft
