// What one forward pass computes: the rows of one or several sequences at once, and which
// optional outputs it hands back (logits of chosen rows, hidden states of chosen layers).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "graft/tensor.hpp"

namespace graft {

using TokenId = std::int32_t;
class RecurrentState;

// The most candidates a pass hands back per row (ForwardBatch::candidates): top_k settings up to
// this read candidates; a larger one reads the row's logits.
inline constexpr std::uint32_t kMaxCandidates = 256;

// One sequence's rows in a batch. Its rows follow the previous sequence's; they are written into
// its own KV store after its n_past committed slots and attend only to that store.
struct SequenceRows {
  KvStore* kv = nullptr;
  std::uint32_t n_tokens = 0;
  std::uint32_t n_past = 0;  // tokens already in kv
  // n_tokens x n_tokens ancestor mask of a token tree (see AttentionBatch); null: causal.
  const std::uint8_t* ancestor = nullptr;
  // The delta-net layers' state of a hybrid model (null for others), at n_past tokens. A chain
  // (ancestor null) advances it past the rows; a token tree leaves it as it is and keeps the rows'
  // inputs for Model::commit_recurrent (recurrent_state.hpp).
  RecurrentState* state = nullptr;
  // The same tree in backend memory, for the kernels: the mask (i8 [n_tokens, n_tokens]) and, for
  // the delta-net layers, each row's parent (i32 [n_tokens]); data null for a chain. Model::forward
  // fills them in from `ancestor`; a BlockRunner's caller passes the mask (BlockRows).
  TensorView mask{};
  TensorView parents{};
};

struct ForwardBatch {
  std::span<const TokenId> tokens;  // every row, the sequences one after another
  // RoPE positions, one per row; empty: n_past + i within each sequence. A token tree passes
  // n_past + depth.
  std::span<const std::int32_t> positions;
  std::span<const SequenceRows> sequences;  // their n_tokens add up to tokens.size()

  // Rows (indices into tokens, any order) whose logits are wanted: ForwardOutput::logits holds
  // n_vocab floats per entry, in this order.
  std::span<const std::uint32_t> logit_rows;
  // Rows whose greedy choice alone is wanted: the highest logit, the lowest id among equal ones
  // (Sampler::plain_argmax: greedy sampling with nothing added to the logits), computed where the
  // logits are (the backend's top_k, k = 1). ForwardOutput::argmax holds one id per entry, in this
  // order: on a GPU a verify pass hands back 4 bytes per row instead of n_vocab floats.
  std::span<const std::uint32_t> argmax_rows;
  // Rows whose `candidates` best entries alone are wanted (1..kMaxCandidates, at most n_vocab):
  // ids and logits, best first (the higher logit, the lower id among equal ones, NaN last), picked
  // by the backend's top_k where the logits are. A sampler whose chain keeps at most its top_k
  // tokens (Sampler::candidates_needed) draws from these exactly as from the whole row: on a GPU
  // a sampled verify row hands back 8 bytes per candidate instead of n_vocab floats.
  // ForwardOutput::candidate_ids / candidate_logits hold `candidates` entries per row, in order.
  std::span<const std::uint32_t> candidate_rows;
  std::uint32_t candidates = 0;
  // Hidden-state taps by llama.cpp's id convention: id L is the input of layer L (0 = the token
  // embeddings), id n_layer the final output before output_norm. ForwardOutput::hidden holds one
  // [rows][n_embd] block per id, in this order, every row of the batch (token-major).
  std::span<const std::int32_t> hidden_layers;
  // Also the final output after output_norm, as one more block after the taps above.
  bool hidden_normed_output = false;
  // Where the taps go: ForwardOutput::hidden on the host and/or ForwardOutput::device_hidden in
  // backend memory (same layout), for drafters that run on the target's backend: on a GPU those
  // never leave it.
  bool hidden_on_host = true;
  bool hidden_on_device = false;
};

struct ForwardOutput {
  std::vector<float> logits;     // logit_rows.size() x n_vocab
  std::vector<TokenId> argmax;   // argmax_rows.size()
  std::vector<TokenId> candidate_ids;   // candidate_rows.size() x candidates, each row best first
  std::vector<float> candidate_logits;  // their logits, laid out the same
  std::vector<float> hidden;  // (hidden_layers.size() + hidden_normed_output) x rows x n_embd
  // The taps in backend memory (ForwardBatch::hidden_on_device), laid out as `hidden`; allocated
  // by the pass that first needs it (or more of it) and kept for the next ones.
  std::unique_ptr<Buffer> device_hidden;
  const float* device_hidden_data() const { return device_hidden ? static_cast<const float*>(device_hidden->data()) : nullptr; }
};

}  // namespace graft
