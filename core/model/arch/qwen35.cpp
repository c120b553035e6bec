// qwen35 (Qwen3.5 / Qwen3.6 dense, the Bonsai-27B family): a hybrid of gated delta-net layers
// (linear attention with a recurrent state) and, every `full_attention_interval`-th layer, gated
// full attention; no ffn_norm but a post_attention_norm before every FFN. Keys, tensors and layer
// rule as llama.cpp stores and runs them (shared/reference/qwen35.md, sections 1-2).
#include <fmt/format.h>

#include "model/architecture.hpp"
#include "model/model_params.hpp"
#include "model/model_weights.hpp"
#include "model/tensor_binder.hpp"

namespace graft {

namespace {

constexpr std::uint32_t kMaxConvKernel = 8;  // what the backends' causal_conv_silu takes

Status read_qwen35(const gguf::File& f, ModelParams& p) {
  const std::string a = "qwen35.";
  auto bad = [&](const std::string& what) { return Status(Errc::invalid_argument, fmt::format("{}: {}", f.name(), what)); };
  auto need = [&](const char* key, std::uint32_t& out) { return read_count(f, a + key, out, 1, std::int64_t{1} << 24); };
  if (!f.get_real(a + "attention.layer_norm_rms_epsilon"))
    return bad(fmt::format("missing metadata key '{}attention.layer_norm_rms_epsilon'", a));
  std::uint32_t inner = 0;
  GRAFT_TRY(need("ssm.conv_kernel", p.ssm_conv_kernel));
  GRAFT_TRY(need("ssm.state_size", p.ssm_state));
  GRAFT_TRY(need("ssm.group_count", p.ssm_groups));
  GRAFT_TRY(need("ssm.time_step_rank", p.ssm_heads));
  GRAFT_TRY(need("ssm.inner_size", inner));
  if (p.ssm_conv_kernel < 2 || p.ssm_conv_kernel > kMaxConvKernel)
    return Status(Errc::unsupported, fmt::format("{}: {}ssm.conv_kernel = {} is not supported (2..{})", f.name(), a,
                                                 p.ssm_conv_kernel, kMaxConvKernel));
  if (inner != p.ssm_heads * p.ssm_state)
    return bad(fmt::format("{}ssm.inner_size {} is not time_step_rank {} x state_size {} (value heads as wide as key heads)",
                           a, inner, p.ssm_heads, p.ssm_state));
  if (p.ssm_heads % p.ssm_groups)
    return bad(fmt::format("{}ssm.time_step_rank {} is not a multiple of ssm.group_count {}", a, p.ssm_heads, p.ssm_groups));
  if (p.ssm_state % 16)
    return Status(Errc::unsupported, fmt::format("{}: {}ssm.state_size = {} is not supported (a multiple of 16)", f.name(),
                                                 a, p.ssm_state));
  // IMROPE: for text every section rotates by the token's position, so it is NEOX RoPE on the
  // first n_rot dims; the sections must be there (llama.cpp requires them) and cover n_rot / 2.
  auto sections = f.get_int_array(a + "rope.dimension_sections");
  if (!sections || sections->size() != 4)
    return bad(fmt::format("metadata key '{}rope.dimension_sections' must be 4 integers", a));
  p.full_attention_interval = 4;
  if (f.find(a + "full_attention_interval")) GRAFT_TRY(need("full_attention_interval", p.full_attention_interval));
  // Layer i is a delta-net unless (i + 1) is a multiple of the interval (llama.cpp's rule); the
  // optional per-layer array overrides it.
  const std::uint32_t n = p.n_main_layers();
  for (std::uint32_t i = 0; i < n; ++i)
    p.layer_kinds[i] = (i + 1) % p.full_attention_interval ? LayerKind::delta_net : LayerKind::gated_attention;
  if (auto rec = f.get_int_array(a + "attention.recurrent_layers")) {
    if (rec->size() != p.n_layer)
      return bad(fmt::format("{}attention.recurrent_layers has {} entries, expected block_count {}", a, rec->size(), p.n_layer));
    for (std::uint32_t i = 0; i < n; ++i) p.layer_kinds[i] = (*rec)[i] ? LayerKind::delta_net : LayerKind::gated_attention;
  }
  if (p.count(LayerKind::gated_attention) == 0)
    return bad(fmt::format("{}full_attention_interval {} leaves no full-attention layer among {}", a,
                           p.full_attention_interval, n));
  return Status::success();
}

Status bind_qwen35_layer(TensorBinder& b, const ModelParams& p, std::uint32_t i, LayerWeights& L) {
  const std::uint64_t E = p.n_embd, D = p.head_dim, H = p.n_head, HKV = p.n_head_kv;
  const std::string pre = fmt::format("blk.{}.", i);
  L.kind = i < p.layer_kinds.size() ? p.layer_kinds[i] : LayerKind::gated_attention;  // MTP blocks: full attention
  GRAFT_TRY(b.vector(pre + "attn_norm.weight", E, L.attn_norm));
  if (L.kind == LayerKind::gated_attention) {
    GRAFT_TRY(b.matrix(pre + "attn_q.weight", E, 2 * H * D, L.wq));  // per head: query, then gate
    GRAFT_TRY(b.matrix(pre + "attn_k.weight", E, HKV * D, L.wk));
    GRAFT_TRY(b.matrix(pre + "attn_v.weight", E, HKV * D, L.wv));
    GRAFT_TRY(b.matrix(pre + "attn_output.weight", H * D, E, L.wo));
    GRAFT_TRY(b.vector(pre + "attn_q_norm.weight", D, L.q_norm));
    GRAFT_TRY(b.vector(pre + "attn_k_norm.weight", D, L.k_norm));
  } else {
    const std::uint64_t C = p.ssm_channels(), V = std::uint64_t(p.ssm_heads) * p.ssm_state, Hv = p.ssm_heads;
    GRAFT_TRY(b.matrix(pre + "attn_qkv.weight", E, C, L.ssm_in));
    GRAFT_TRY(b.matrix(pre + "attn_gate.weight", E, V, L.ssm_gate));
    GRAFT_TRY(b.vector(pre + "ssm_conv1d.weight", std::uint64_t(p.ssm_conv_kernel) * C, L.ssm_conv));
    GRAFT_TRY(b.vector(pre + "ssm_dt.bias", Hv, L.ssm_dt_bias));
    GRAFT_TRY(b.vector(pre + "ssm_a", Hv, L.ssm_a));
    GRAFT_TRY(b.matrix(pre + "ssm_beta.weight", E, Hv, L.ssm_beta));
    GRAFT_TRY(b.matrix(pre + "ssm_alpha.weight", E, Hv, L.ssm_alpha));
    GRAFT_TRY(b.vector(pre + "ssm_norm.weight", p.ssm_state, L.ssm_norm));
    GRAFT_TRY(b.matrix(pre + "ssm_out.weight", V, E, L.ssm_out));
  }
  // The pre-FFN norm (HF's post_attention_layernorm); qwen35 has no ffn_norm.
  GRAFT_TRY(b.vector(pre + "post_attention_norm.weight", E, L.ffn_norm));
  GRAFT_TRY(b.matrix(pre + "ffn_gate.weight", E, p.n_ff, L.w_gate));
  GRAFT_TRY(b.matrix(pre + "ffn_up.weight", E, p.n_ff, L.w_up));
  GRAFT_TRY(b.matrix(pre + "ffn_down.weight", p.n_ff, E, L.w_down));
  return Status::success();
}

}  // namespace

const Architecture& qwen35_architecture() {
  static const Architecture a{
      "qwen35",
      [](ModelParams& p) {
        p.rope_neox = true;  // IMROPE on text positions
        p.qk_norm = true;
        p.rope_freq_base = 10000.0f;
      },
      read_qwen35,
      bind_qwen35_layer,
      LayerKind::gated_attention,  // its MTP block is a full-attention block (qwen35.md section 7)
  };
  return a;
}

}  // namespace graft
