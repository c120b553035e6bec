// One sequence's DFlash computation (tools/zoo/dflash.py has the equations):
// - context: each committed token j gives c_j = enc.output_norm(fc(its target hidden states)),
//   and every drafter layer keeps k_norm(W_k c_j) roped at position j and W_v c_j in this
//   drafter's own KV store at slot j (no query, no attn_norm);
// - block: [anchor, MASK x (rows - 1)] at positions p..p+rows-1 (p = the context length) runs
//   through the layers, attending to every context slot and, bidirectionally, to the whole block
//   (an all-ones ancestor mask); with DFlash2 the dynamic causal conv wraps attention and the FFN;
//   then output_norm and the lm_head give slot k's logits (k = 1..rows-1 predicts token p + k).
//   The block's K/V are cut off again afterwards.
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "dflash_file.hpp"

namespace graft::dflash2 {

class DFlashPass {
 public:
  // Binds the layers with one warm-up block, so a layer tensor that does not fit fails here.
  static Expected<std::unique_ptr<DFlashPass>> create(const DrafterHost& host, std::shared_ptr<const DFlashFile> file);
  // What create() holds: its runner (made through the planning host), KV cache and buffer.
  static Expected<DrafterMemory> memory(const DrafterHost& host, const DFlashFile& file);

  // Context tokens covered: those with K/V here and those skipped.
  std::uint32_t context() const noexcept { return n_ctx_; }
  // Context K/V for the next n tokens (positions context()..), features [n][feature_width] on the host.
  Status add_context(std::uint32_t n, const float* features);
  // The next n tokens get no K/V: the block's attention skips them (RoPE keeps true positions).
  void skip(std::uint32_t n) { n_ctx_ += n; }
  Status truncate(std::uint32_t n);
  // Runs the block; logits() then holds [rows - 1][n_vocab] and, with the selector, gate()
  // [rows - 1][rank] (selector_hidden of each slot's normed hidden state).
  Status run_block(std::int32_t anchor, std::uint32_t rows);
  const std::vector<float>& logits() const noexcept { return logits_; }
  const std::vector<float>& gate() const noexcept { return gate_; }
  // Rows of a selector table (sel_prev or sel_next) for `ids`, [ids.size()][rank] on the host.
  Status selector_rows(const Weight& table, const std::vector<std::int32_t>& ids, std::vector<float>& out);

 private:
  // values copied to dst (backend memory, room for them), as a view for the kernels.
  Expected<TensorView> upload(std::int32_t* dst, std::span<const std::int32_t> values);
  DFlashPass() = default;
  // x += conv(side 1, half(conv(side 0, norm(x)))) for one half of layer l (attention or ffn).
  Status half(std::uint32_t l, bool attention, std::uint32_t rows, const BlockRows& block_rows);
  // out = causal_conv(in) over the block's rows; in, out and dyn_ in backend memory. On a backend
  // whose memory the host cannot read (a GPU) the rows go to the host and back (blocking copies:
  // the convolution has no device kernel yet).
  Status conv(std::uint32_t side, std::uint32_t rows, const float* in, const float* base, float* out);

  std::shared_ptr<const DFlashFile> f_;
  Backend* be_ = nullptr;
  std::unique_ptr<BlockRunner> runner_;
  std::unique_ptr<KvStore> kv_;
  std::uint32_t n_ctx_ = 0;
  std::vector<std::int32_t> slot_pos_;  // the position of each KV slot's token (slot j = position j without skips)
  std::int32_t *ids_dev_ = nullptr, *pos_dev_ = nullptr;  // backend memory: ids and positions of a call
  std::uint8_t* ones_dev_ = nullptr;                      // backend memory: the block's all-ones mask
  std::vector<std::int32_t> positions_;
  // Backend buffers: context chunk feat [F, R], c [E, R], k and v [KV, R]; block x, h, t, a, out
  // [E, B], dyn [W, B], logits [V, B], gate [rank, B]; selector rows [rank, B * K].
  std::unique_ptr<Buffer> buf_;
  float *feat_ = nullptr, *c_ = nullptr, *k_ = nullptr, *v_ = nullptr;
  float *x_ = nullptr, *h_ = nullptr, *t_ = nullptr, *a_ = nullptr, *out_ = nullptr, *dyn_ = nullptr;
  float *logits_dev_ = nullptr, *gate_dev_ = nullptr, *sel_dev_ = nullptr;
  std::uint32_t sel_rows_ = 0;
  std::vector<float> logits_, gate_;  // host copies of the last block's
  // A device backend's convolution on the host: each layer's attention and FFN conv_base (2 per
  // layer), and the rows in and out.
  bool conv_on_host_copies_ = false;
  std::vector<std::vector<float>> base_host_;
  std::vector<float> conv_in_, conv_dyn_, conv_out_;
};

}  // namespace graft::dflash2
