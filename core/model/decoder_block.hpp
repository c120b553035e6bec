// The decoder block of every architecture (llama, qwen3, qwen35): the one piece of code the target's forward pass, its MTP (nextn)
// blocks and drafters' own layers all run, so a drafter never re-implements attention or matmul.
// Shapes: E = n_embd, D = head_dim, H = n_head, HKV = n_head_kv, F = n_ff, n = rows.
#pragma once

#include <cstdint>
#include <span>

#include "graft/backend.hpp"
#include "model/forward_batch.hpp"
#include "model/model_params.hpp"
#include "model/model_weights.hpp"
#include "model/recurrent_state.hpp"
#include "model/workspace.hpp"

namespace graft {

class DecoderBlock {
 public:
  DecoderBlock(Backend& backend, const ModelParams& params) : be_(&backend), p_(params) {}

  const ModelParams& params() const { return p_; }
  Backend& backend() const { return *be_; }

  // x [E, n] += block(x) (norms, the layer's mixer, residuals, SwiGLU). The mixer is attention
  // over each sequence's store, or a delta-net over each sequence's recurrent state; `slot` is the
  // layer's index among the layers of its kind (its layer in the KV store, or in the state).
  // Scratch from ws (x itself may be ws.x or any packed [E, n] buffer). positions: i32 [n] and the
  // sequences' masks and parents in backend memory (SequenceRows::mask, ::parents).
  Status layer(Workspace& ws, const LayerWeights& L, std::uint32_t slot, std::span<const SequenceRows> seqs,
               const TensorView& positions, std::uint32_t n, float* x) const;
  // out [E, n] = wo(attention(in)): in already normed; in and out may be one buffer (ws.h).
  Status attention(Workspace& ws, const LayerWeights& L, std::uint32_t kv_layer, std::span<const SequenceRows> seqs,
                   const TensorView& positions, std::uint32_t n, const float* in, float* out) const;
  // out [E, n] = ssm_out(gated_norm(delta_rule(conv(in)))) (qwen35.md section 4): in already
  // normed; in and out may be one buffer. Each sequence's rows run over its own recurrent state
  // (layer `index` of it), after that layer has applied the state's deferred path
  // (settle_delta_net): a chain advances it, a token tree (SequenceRows::parents) leaves it and
  // keeps what moves it on by each row (RecurrentState's pending rows).
  Status delta_net(Workspace& ws, const LayerWeights& L, std::uint32_t index, std::span<const SequenceRows> seqs,
                   std::uint32_t n, const float* in, float* out) const;
  // Layer `index` of `state` moves on past its deferred path (rows of the token tree its last pass
  // kept), as if they had been decoded one by one (the same bits).
  Status settle_delta_net(std::uint32_t index, RecurrentState& state) const;
  // out [E, n] = w_down(silu(w_gate in) * w_up in); in and out may be one buffer.
  Status ffn(Workspace& ws, const LayerWeights& L, std::uint32_t n, const float* in, float* out) const;
  // y [m, n] = x [k, n] w^T through the weight's format kernels.
  Status matmul(const MatrixWeight& w, const float* x, std::uint32_t n, float* y) const;

 private:
  Backend* be_;
  ModelParams p_;
};

}  // namespace graft
