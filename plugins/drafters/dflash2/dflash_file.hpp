// A DFlash drafter GGUF (llama.cpp's `dflash` convention, docs/models.md) opened against its
// target, checked and bound to the target's backend: shared, read-only, by every sequence's
// drafter. Metadata: dflash.{block_count, embedding_length, feed_forward_length,
// attention.head_count[_kv], attention.key_length, attention.layer_norm_rms_epsilon,
// rope.freq_base, block_size, target_layers}, tokenizer.ggml.mask_token_id; DFlash2 adds
// dflash.{conv_kernel_size, conv_group_size, selector_top_k}. Tensors: fc, enc.output_norm,
// blk.N.* (qwen3 blocks), output_norm; token_embd / output when the drafter has its own (else the
// target's); DFlash2's blk.N.{attn,ffn}_conv_{base,proj} and selector_{predecessor,successor,hidden}.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "causal_conv.hpp"
#include "graft/graft.hpp"

namespace graft::dflash2 {

struct DFlashLayer {
  std::unique_ptr<Weight> attn_norm, ffn_norm;
  std::unique_ptr<Weight> k, v, k_norm;  // the context's K/V projections (k_norm null without qk norm)
  // DFlash2 convolutions; null in a plain DFlash file.
  std::unique_ptr<Weight> attn_conv_base, attn_conv_proj, ffn_conv_base, ffn_conv_proj;
};

struct DFlashFile {
  // Errors are one line naming the file and the numbers that do not fit the target.
  static Expected<std::shared_ptr<const DFlashFile>> open(const DrafterHost& host, const std::string& path);

  std::unique_ptr<WeightFile> file;
  std::string path;
  BlockShape shape;
  std::uint32_t n_layers = 0;
  std::uint32_t block_size = 0;
  std::int32_t mask_token = 0;
  std::vector<std::int32_t> target_layers;  // hidden-state taps by llama.cpp's ids
  std::uint32_t feature_width = 0;          // target_layers.size() * the target's n_embd: fc's input
  std::uint32_t n_vocab = 0;                // the target's
  bool has_conv = false;
  ConvShape conv;
  bool has_selector = false;
  std::uint32_t selector_rank = 0;
  std::uint32_t selector_top_k = 0;

  std::unique_ptr<Weight> fc, enc_norm, output_norm, embed, lm_head;
  std::unique_ptr<Weight> sel_prev, sel_next, sel_hidden;  // null without the selector
  std::vector<DFlashLayer> layers;
};

}  // namespace graft::dflash2
