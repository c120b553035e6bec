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
}

Status validate(const SynthConfig& cfg) {
  auto bad = [](std::string m) { return Status(Errc::invalid_argument, std::move(m)); };
  if (cfg.arch.empty()) return bad("--arch is required (llama or qwen3) unless the preset sets it");
  if (cfg.arch != "llama" && cfg.arch != "qwen3") return bad(fmt::format("unknown --arch '{}' (supported: llama, qwen3)", cfg.arch));
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
  if (cfg.n_vocab < 260)
    return bad(fmt::format("--n-vocab {} is too small: 256 byte tokens, 3 special tokens and at least one merge need 260",
                           cfg.n_vocab));
  return {};
}

std::vector<TensorPlan> plan_tensors(const SynthConfig& cfg) {
  using U = std::uint64_t;
  const U e = static_cast<U>(cfg.n_embd), hd = static_cast<U>(cfg.head_dim_or_default());
  const U q = static_cast<U>(cfg.n_head) * hd, kv = static_cast<U>(cfg.n_head_kv) * hd, ff = static_cast<U>(cfg.n_ff);
  const U vocab = static_cast<U>(cfg.n_vocab);
  std::vector<TensorPlan> t;
  t.push_back({"token_embd.weight", {e, vocab}, TensorRole::embedding});
  t.push_back({"output_norm.weight", {e}, TensorRole::norm});
  if (!cfg.tied) t.push_back({"output.weight", {e, vocab}, TensorRole::matrix});
  for (std::int64_t l = 0; l < cfg.n_layer; ++l) {
    auto n = [&](const char* what) { return fmt::format("blk.{}.{}.weight", l, what); };
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
