#include "synth/synth_config.hpp"

#include <fmt/format.h>


namespace graft::synth {

const std::vector<Preset>& presets() {
  // Qwen3 shapes are those of the released models' config.json (hidden_size, num_hidden_layers,
  // num_attention_heads, num_key_value_heads, head_dim 128, intermediate_size, vocab_size,
  // max_position_embeddings, tie_word_embeddings).
  static const std::vector<Preset> list = {
      {"tiny", "", 64, 2, 4, 2, 128, 512, 0, 2048, false, "unit tests: any arch, ~0.1M parameters"},
      {"bench-250m", "llama", 1024, 16, 16, 8, 2816, 32000, 0, 4096, false, "llama benchmark model, ~254M parameters"},
      {"qwen3-0.6b", "qwen3", 1024, 28, 16, 8, 3072, 151936, 128, 40960, true, "Qwen3-0.6B shapes"},
      {"qwen3-1.7b", "qwen3", 2048, 28, 16, 8, 6144, 151936, 128, 40960, true, "Qwen3-1.7B shapes"},
      {"qwen3-8b", "qwen3", 4096, 36, 32, 8, 12288, 151936, 128, 40960, false, "Qwen3-8B shapes"},
      // qwen35: the 27B shapes of shared/reference/qwen35.md (n_embd, n_ff, vocab, layers and heads
      // from llama.cpp's schema; head size 256, 64 rotated dims, 16 q/k and 48 v delta-net heads of
      // 128 from the model card).
      {"qwen35-tiny", "qwen35", 64, 4, 4, 2, 128, 512, 32, 2048, false, "unit tests: qwen35 hybrid, 3 delta-net + 1 attention layer",
       {4, 16, 2, 4, 4, 16}},
      // A ~1.9B hybrid for benchmarks beside llama.cpp: our choice of shapes near a 2B Qwen3.5
      // (24 layers of width 2048, Qwen3.6's head and delta-net sizes, tied), not a released config.
      {"qwen35-2b", "qwen35", 2048, 24, 8, 2, 6144, 248320, 256, 262144, true,
       "~1.9B qwen35 hybrid for benchmarks (18 delta-net + 6 attention layers; not a released model's shapes)",
       {4, 128, 16, 16, 4, 64}},
      {"qwen36-27b", "qwen35", 5120, 64, 24, 4, 17408, 248320, 256, 262144, false, "Qwen3.6-27B shapes (qwen35 hybrid)",
       {4, 128, 16, 48, 4, 64}},
      {"bonsai-27b", "qwen35", 5120, 64, 24, 4, 17408, 248320, 256, 262144, false,
       "Bonsai-27B shapes: Qwen3.6-27B's (qwen35); its files are Q1_0 (--type q1_0)", {4, 128, 16, 48, 4, 64}},
  };
  return list;
}

const Preset* find_preset(std::string_view name) {
  for (const auto& p : presets())
    if (p.name == name) return &p;
  return nullptr;
}

void apply_preset(const Preset& p, SynthConfig& cfg) {
  cfg.preset = std::string(p.name);
  if (!p.arch.empty()) cfg.arch = std::string(p.arch);
  cfg.n_embd = p.n_embd;
  cfg.n_layer = p.n_layer;
  cfg.n_head = p.n_head;
  cfg.n_head_kv = p.n_head_kv;
  cfg.n_ff = p.n_ff;
  cfg.n_vocab = p.n_vocab;
  cfg.head_dim = p.head_dim;
  cfg.ctx = p.ctx;
  cfg.tied = p.tied;
  cfg.hybrid = p.hybrid;
}

Status validate(const SynthConfig& cfg) {
  auto bad = [](std::string m) { return Status(Errc::invalid_argument, std::move(m)); };
  if (cfg.arch.empty()) return bad("--arch is required (llama, qwen3 or qwen35) unless the preset sets it");
  if (cfg.arch != "llama" && cfg.arch != "qwen3" && cfg.arch != "qwen35")
    return bad(fmt::format("unknown --arch '{}' (supported: llama, qwen3, qwen35)", cfg.arch));
  if ((cfg.arch == "qwen35") != (cfg.hybrid.conv_kernel > 0))
    return bad(cfg.arch == "qwen35" ? "--arch qwen35 needs a qwen35 preset (qwen35-tiny, qwen35-2b, qwen36-27b, bonsai-27b)"
                                    : fmt::format("--preset {} is a qwen35 model, not {}", cfg.preset, cfg.arch));
  const std::pair<const char*, std::int64_t> positive[] = {
      {"--n-embd", cfg.n_embd}, {"--n-layer", cfg.n_layer}, {"--n-head", cfg.n_head}, {"--n-head-kv", cfg.n_head_kv},
      {"--n-ff", cfg.n_ff},     {"--ctx", cfg.ctx},         {"--n-vocab", cfg.n_vocab}};
  // 2^24 per dimension keeps every product below 2^63 and every row within what GGUF tools take.
  for (const auto& [flag, v] : positive) {
    if (v < 1 || v > (1 << 24)) return bad(fmt::format("{} {} is out of range: must be in 1..{}", flag, v, 1 << 24));
  }
  if (cfg.head_dim < 0 || cfg.head_dim > 4096) return bad(fmt::format("--head-dim {} is out of range: must be in 1..4096", cfg.head_dim));
  if (cfg.head_dim == 0 && cfg.n_embd % cfg.n_head != 0)
    return bad(fmt::format("--n-head {} does not divide --n-embd {} (or give --head-dim)", cfg.n_head, cfg.n_embd));
  if (cfg.n_head % cfg.n_head_kv != 0)
    return bad(fmt::format("--n-head-kv {} does not divide --n-head {}", cfg.n_head_kv, cfg.n_head));
  if (cfg.head_dim_or_default() % 2 != 0)
    return bad(fmt::format("head dimension {} is odd: RoPE rotates pairs", cfg.head_dim_or_default()));
  // 256 byte tokens and 3 special tokens are always present, and a "gpt2" vocabulary without
  // merges does not load.
  if (cfg.nextn < 0 || cfg.nextn > 4) return bad(fmt::format("--nextn {} is out of range: must be in 0..4", cfg.nextn));
  if (cfg.n_vocab < 260)
    return bad(fmt::format("--n-vocab {} is too small: 256 byte tokens, 3 special tokens and at least one merge need 260",
                           cfg.n_vocab));
  return {};
}

namespace {

// qwen35's layer l: a gated delta-net or gated full attention, then post_attention_norm and SwiGLU
// (shared/reference/qwen35.md, section 2).
void plan_qwen35_layer(const SynthConfig& cfg, std::int64_t l, std::vector<TensorPlan>& t) {
  using U = std::uint64_t;
  const U e = static_cast<U>(cfg.n_embd), hd = static_cast<U>(cfg.head_dim_or_default()), ff = static_cast<U>(cfg.n_ff);
  const U q = static_cast<U>(cfg.n_head) * hd, kv = static_cast<U>(cfg.n_head_kv) * hd;
  const HybridShape& h = cfg.hybrid;
  const U dk = static_cast<U>(h.state), hv = static_cast<U>(h.heads), v = hv * dk;
  const U channels = 2 * static_cast<U>(h.groups) * dk + v;
  auto n = [&](const char* what) { return fmt::format("blk.{}.{}.weight", l, what); };
  t.push_back({n("attn_norm"), {e}, TensorRole::norm});
  if (cfg.delta_net_layer(l)) {
    t.push_back({n("attn_qkv"), {e, channels}, TensorRole::matrix});
    t.push_back({n("attn_gate"), {e, v}, TensorRole::matrix});
    t.push_back({n("ssm_conv1d"), {static_cast<U>(h.conv_kernel), channels}, TensorRole::matrix});
    t.push_back({fmt::format("blk.{}.ssm_dt.bias", l), {hv}, TensorRole::bias});
    t.push_back({fmt::format("blk.{}.ssm_a", l), {hv}, TensorRole::decay});
    t.push_back({n("ssm_beta"), {e, hv}, TensorRole::matrix});
    t.push_back({n("ssm_alpha"), {e, hv}, TensorRole::matrix});
    t.push_back({n("ssm_norm"), {dk}, TensorRole::norm});
    t.push_back({n("ssm_out"), {v, e}, TensorRole::matrix});
  } else {
    t.push_back({n("attn_q"), {e, 2 * q}, TensorRole::matrix});  // per head: query, then gate
    t.push_back({n("attn_k"), {e, kv}, TensorRole::matrix});
    t.push_back({n("attn_v"), {e, kv}, TensorRole::matrix});
    t.push_back({n("attn_output"), {q, e}, TensorRole::matrix});
    t.push_back({n("attn_q_norm"), {hd}, TensorRole::norm});
    t.push_back({n("attn_k_norm"), {hd}, TensorRole::norm});
  }
  t.push_back({n("post_attention_norm"), {e}, TensorRole::norm});
  t.push_back({n("ffn_gate"), {e, ff}, TensorRole::matrix});
  t.push_back({n("ffn_up"), {e, ff}, TensorRole::matrix});
  t.push_back({n("ffn_down"), {ff, e}, TensorRole::matrix});
}

}  // namespace

std::vector<TensorPlan> plan_tensors(const SynthConfig& cfg) {
  using U = std::uint64_t;
  const U e = static_cast<U>(cfg.n_embd), hd = static_cast<U>(cfg.head_dim_or_default());
  const U q = static_cast<U>(cfg.n_head) * hd, kv = static_cast<U>(cfg.n_head_kv) * hd, ff = static_cast<U>(cfg.n_ff);
  const U vocab = static_cast<U>(cfg.n_vocab);
  std::vector<TensorPlan> t;
  t.push_back({"token_embd.weight", {e, vocab}, TensorRole::embedding});
  t.push_back({"output_norm.weight", {e}, TensorRole::norm});
  if (!cfg.tied) t.push_back({"output.weight", {e, vocab}, TensorRole::matrix});
  for (std::int64_t l = 0; l < cfg.n_layer + cfg.nextn; ++l) {
    auto n = [&](const char* what) { return fmt::format("blk.{}.{}.weight", l, what); };
    if (l >= cfg.n_layer) {  // an MTP block: [embedding ; hidden] -> E, its norms, then the block
      t.push_back({n("nextn.eh_proj"), {2 * e, e}, TensorRole::matrix});
      t.push_back({n("nextn.enorm"), {e}, TensorRole::norm});
      t.push_back({n("nextn.hnorm"), {e}, TensorRole::norm});
      t.push_back({n("nextn.shared_head_norm"), {e}, TensorRole::norm});
    }
    if (cfg.arch == "qwen35") {
      plan_qwen35_layer(cfg, l, t);
      continue;
    }
    t.push_back({n("attn_norm"), {e}, TensorRole::norm});
    t.push_back({n("attn_q"), {e, q}, TensorRole::matrix});
    t.push_back({n("attn_k"), {e, kv}, TensorRole::matrix});
    t.push_back({n("attn_v"), {e, kv}, TensorRole::matrix});
    t.push_back({n("attn_output"), {q, e}, TensorRole::matrix});
    if (cfg.arch == "qwen3") {
      t.push_back({n("attn_q_norm"), {hd}, TensorRole::norm});
      t.push_back({n("attn_k_norm"), {hd}, TensorRole::norm});
    }
    t.push_back({n("ffn_norm"), {e}, TensorRole::norm});
    t.push_back({n("ffn_gate"), {e, ff}, TensorRole::matrix});
    t.push_back({n("ffn_up"), {e, ff}, TensorRole::matrix});
    t.push_back({n("ffn_down"), {ff, e}, TensorRole::matrix});
  }
  return t;
}

std::uint64_t parameter_count(const SynthConfig& cfg) {
  std::uint64_t total = 0;
  for (const auto& t : plan_tensors(cfg)) {
    std::uint64_t n = 1;
    for (const auto d : t.ne) n *= d;
    total += n;
  }
  return total;
}

}  // namespace graft::synth
