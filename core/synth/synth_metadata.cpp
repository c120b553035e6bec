// The metadata of a synthetic model: the keys llama.cpp's llama and qwen3 loaders read, and the
// synthetic tokenizer.
#include <fmt/format.h>

#include "synth/synth_model.hpp"
#include "synth/synth_vocab.hpp"

namespace graft::synth {

Status add_metadata(gguf::Writer& w, const SynthConfig& cfg, bool quantized) {
  const std::string& a = cfg.arch;
  auto u32 = [](std::int64_t v) { return static_cast<std::uint32_t>(v); };
  const std::int64_t hd = cfg.head_dim_or_default();

  w.add_string("general.architecture", a);
  // Presets of one architecture already say which; tiny and custom shapes fit both.
  const std::string preset = cfg.preset.empty() ? "custom" : cfg.preset;
  const bool arch_in_preset = preset.rfind(a, 0) == 0 || preset == "bench-250m";
  w.add_string("general.name", arch_in_preset ? "graft-synth-" + preset : fmt::format("graft-synth-{}-{}", preset, a));
  w.add_string("general.description", fmt::format("random weights from graft synth (seed {})", cfg.seed));
  if (quantized) w.add_u32("general.quantization_version", 2);
  w.add_u32(a + ".block_count", u32(cfg.n_layer + cfg.nextn));  // llama.cpp counts the MTP blocks too
  if (cfg.nextn > 0) w.add_u32(a + ".nextn_predict_layers", u32(cfg.nextn));
  w.add_u32(a + ".context_length", u32(cfg.ctx));
  w.add_u32(a + ".embedding_length", u32(cfg.n_embd));
  w.add_u32(a + ".feed_forward_length", u32(cfg.n_ff));
  w.add_u32(a + ".attention.head_count", u32(cfg.n_head));
  w.add_u32(a + ".attention.head_count_kv", u32(cfg.n_head_kv));
  w.add_f32(a + ".attention.layer_norm_rms_epsilon", cfg.rms_eps());
  w.add_f32(a + ".rope.freq_base", cfg.rope_freq_base());
  if (a == "llama") {
    w.add_u32(a + ".rope.dimension_count", u32(hd));
    w.add_u32(a + ".vocab_size", u32(cfg.n_vocab));
  }
  if (a == "qwen35") {
    const HybridShape& h = cfg.hybrid;
    w.add_u32(a + ".rope.dimension_count", u32(h.n_rot));
    // IMROPE sections over the n_rot / 2 pairs (the 27B's [11, 11, 10, 0] for 32 pairs).
    const std::int64_t pairs = h.n_rot / 2, s0 = (pairs + 2) / 3, s1 = (pairs + 1) / 3;
    w.add_i32_array(a + ".rope.dimension_sections",
                    {static_cast<std::int32_t>(s0), static_cast<std::int32_t>(s1), static_cast<std::int32_t>(pairs - s0 - s1), 0});
    w.add_u32(a + ".ssm.conv_kernel", u32(h.conv_kernel));
    w.add_u32(a + ".ssm.state_size", u32(h.state));
    w.add_u32(a + ".ssm.group_count", u32(h.groups));
    w.add_u32(a + ".ssm.time_step_rank", u32(h.heads));
    w.add_u32(a + ".ssm.inner_size", u32(h.heads * h.state));
    w.add_u32(a + ".full_attention_interval", u32(h.interval));
  }
  // qwen3 always states the head size (128 != n_embd / n_head in the real models); llama only
  // when it differs from the default llama.cpp derives.
  if (a == "qwen3" || a == "qwen35" || cfg.head_dim > 0) {
    w.add_u32(a + ".attention.key_length", u32(hd));
    w.add_u32(a + ".attention.value_length", u32(hd));
  }

  const bool qwen = a == "qwen3" || a == "qwen35";
  // The pre-tokenizer each family's real files name (Qwen3.5/3.6 files say "qwen35").
  auto vocab = build_vocab(cfg.n_vocab, a == "qwen35" ? "qwen35" : qwen ? "qwen2" : "llama-bpe", !qwen);
  if (!vocab) return std::move(vocab).status();
  w.add_string("tokenizer.ggml.model", vocab->model);
  w.add_string("tokenizer.ggml.pre", vocab->pre);
  w.add_string_array("tokenizer.ggml.tokens", std::move(vocab->tokens));
  w.add_i32_array("tokenizer.ggml.token_type", std::move(vocab->token_types));
  w.add_string_array("tokenizer.ggml.merges", std::move(vocab->merges));
  w.add_u32("tokenizer.ggml.bos_token_id", u32(*vocab->bos_id));
  w.add_u32("tokenizer.ggml.eos_token_id", u32(*vocab->eos_id));
  w.add_u32("tokenizer.ggml.padding_token_id", u32(*vocab->pad_id));
  w.add_bool("tokenizer.ggml.add_bos_token", *vocab->add_bos);
  w.add_bool("tokenizer.ggml.add_eos_token", *vocab->add_eos);
  return {};
}

}  // namespace graft::synth
