// The llama/qwen3 forward pass, written once against the SDK interfaces: generic ops from the
// backend, matmuls from weight-format kernels, attention from the KV store. The same code serves
// prefill (many tokens), decode (one) and speculative verification (a token tree).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graft/backend.hpp"
#include "graft/host.hpp"
#include "graft/kv_store.hpp"
#include "gguf/gguf_file.hpp"
#include "model/model_params.hpp"
#include "model/model_weights.hpp"

namespace graft {

using TokenId = std::int32_t;

struct ForwardBatch {
  std::span<const TokenId> tokens;
  // RoPE positions; empty: n_past + i. A token tree passes depths (n_past + depth).
  std::span<const std::int32_t> positions;
  std::uint32_t n_past = 0;  // tokens already in the KV store; the batch is written after them
  // n x n ancestor mask (see AttentionBatch); null: causal.
  const std::uint8_t* ancestor = nullptr;
  bool all_logits = false;   // false: only the last token's logits
};

struct TransformerOptions {
  // Stack q/k/v and gate/up into one matrix each where their types agree (stacked_matrix.hpp):
  // the same logits, bit for bit, with three fewer matmul calls per layer. Off only to compare.
  bool fuse_projections = true;
};

class Transformer {
 public:
  // Keeps `file` (the mapping its weights point into) alive. max_batch bounds the tokens per
  // forward call and sizes the scratch buffers.
  static Expected<std::unique_ptr<Transformer>> load(std::shared_ptr<const gguf::File> file, Backend& backend,
                                                     std::string_view backend_name, const HostServices& host,
                                                     std::uint32_t max_batch, const TransformerOptions& options = {});

  const ModelParams& params() const { return params_; }
  const ModelWeights& weights() const { return weights_; }
  std::uint32_t max_batch() const { return max_batch_; }
  std::uint64_t scratch_bytes() const { return scratch_bytes_; }
  KvGeometry kv_geometry(std::uint32_t capacity) const;

  // logits: n_vocab floats per requested row (all rows, or the last), appended after clearing.
  Status forward(const ForwardBatch& batch, KvStore& kv, std::vector<float>& logits);

 private:
  Transformer() = default;
  Status matmul(const MatrixWeight& w, float* x, std::uint32_t n, float* y);
  Status layer(std::uint32_t il, std::uint32_t n, const std::int32_t* positions, const ForwardBatch& batch, KvStore& kv);

  std::shared_ptr<const gguf::File> file_;
  Backend* backend_ = nullptr;
  ModelParams params_;
  ModelWeights weights_;
  std::uint32_t max_batch_ = 0;
  std::uint64_t scratch_bytes_ = 0;
  std::unique_ptr<Buffer> scratch_;
  // q_, k_, v_ and up_ serve layers whose projections are separate; qkv_ ([token][q | k | v]) and
  // gate_up_ ([token][gate | up]) the stacked ones. gate_ is SwiGLU's output either way.
  float *x_ = nullptr, *h_ = nullptr, *q_ = nullptr, *k_ = nullptr, *v_ = nullptr, *attn_ = nullptr, *gate_ = nullptr,
        *up_ = nullptr, *qkv_ = nullptr, *gate_up_ = nullptr, *logits_ = nullptr;
  std::vector<std::int32_t> positions_;
};

}  // namespace graft
