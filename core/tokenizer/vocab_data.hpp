// A vocabulary as GGUF stores it under tokenizer.ggml.*, before any interpretation. from_gguf
// fills it from a file; tests fill it by hand to build small tokenizers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace graft {

struct VocabData {
  std::string model;                      // tokenizer.ggml.model: "gpt2" | "llama"
  std::string pre;                        // tokenizer.ggml.pre; empty when absent
  std::vector<std::string> tokens;        // tokenizer.ggml.tokens (id = index)
  std::vector<float> scores;              // tokenizer.ggml.scores (SPM); empty = all 0
  std::vector<std::int32_t> token_types;  // tokenizer.ggml.token_type; empty = all normal
  std::vector<std::string> merges;        // tokenizer.ggml.merges, "left right", rank = index

  // tokenizer.ggml.<name>_token_id; nullopt when absent.
  std::optional<std::int64_t> bos_id, eos_id, eot_id, eom_id, unk_id, sep_id, pad_id, mask_id;
  std::optional<std::int64_t> fim_pre_id, fim_suf_id, fim_mid_id, fim_pad_id, fim_rep_id, fim_sep_id;

  std::optional<bool> add_bos;           // tokenizer.ggml.add_bos_token
  std::optional<bool> add_eos;           // tokenizer.ggml.add_eos_token
  std::optional<bool> add_space_prefix;  // tokenizer.ggml.add_space_prefix (SPM)
};

}  // namespace graft
