// A GGUF file's tensors as a drafter uses them: bound to the weight-format kernels of the target's
// backend (so a drafter multiplies by any format the target could), and the decoder block of the
// llama/qwen3 kind run over caller-owned activations by the same code as the target's forward
// pass (so no drafter re-implements attention or matmul).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// One tensor of a file on a backend. A matrix W is [k = ne[0], m = ne[1]] used as y = x W^T.
class Weight {
 public:
  virtual ~Weight() = default;
  // The tensor as the file shapes it, in backend memory. A vector (1-D) is f32 whatever the file
  // stores, ready for Backend::rms_norm.
  virtual const TensorView& view() const noexcept = 0;
  // y [m, n] = x [k, n] W^T; x and y packed f32 in backend memory. Rows are independent (a row's
  // result never depends on n).
  virtual Status matmul(const TensorView& x, const TensorView& y) const = 0;
  // y [k, n] = rows ids[0..n) of W (an embedding table), f32; ids i32 [n] in backend memory.
  virtual Status get_rows(const TensorView& ids, const TensorView& y) const = 0;
};

// Hyperparameters of a llama/qwen3 decoder block.
struct BlockShape {
  std::uint32_t n_embd = 0;
  std::uint32_t n_head = 0;
  std::uint32_t n_head_kv = 0;
  std::uint32_t head_dim = 0;
  std::uint32_t n_ff = 0;
  float rms_eps = 1e-6f;
  RopeParams rope;
  bool qk_norm = false;  // qwen3: RMSNorm of q and k per head (attn_q_norm, attn_k_norm)
};

// The rows of one block call: written into the KV store after its n_past slots.
// Its index arrays are in backend memory (the runner's caller uploads them, e.g. with copy_async
// from pinned memory), so a block call enqueues work and waits for nothing.
struct BlockRows {
  std::uint32_t n_tokens = 0;
  std::uint32_t n_past = 0;
  TensorView positions{};  // RoPE positions, i32 [n_tokens]
  TensorView ancestor{};   // i8 [n_tokens, n_tokens] mask (AttentionBatch); data null: causal
};

// Scratch for up to max_rows rows and the blocks blk.N of one file over it. Tensors passed in
// are [n_embd, n_tokens] packed f32 in backend memory. Not thread-safe: one runner per drafter.
class BlockRunner {
 public:
  virtual ~BlockRunner() = default;
  virtual std::uint32_t max_rows() const noexcept = 0;
  // x += block(x): attn_norm, attention (q/k norms, RoPE, K/V written to kv's layer kv_layer at
  // slots n_past.., attend), residual, ffn_norm, SwiGLU, residual. Bit for bit the target's layer.
  virtual Status layer(std::uint32_t block, KvStore& kv, std::uint32_t kv_layer, const BlockRows& rows,
                       const TensorView& x) = 0;
  // The two halves without norm or residual, for drafters that put something between:
  // out = attn_output(attention(in)) with in already normed; in and out may be the same view.
  virtual Status attention(std::uint32_t block, KvStore& kv, std::uint32_t kv_layer, const BlockRows& rows,
                           const TensorView& in, const TensorView& out) = 0;
  // out = ffn_down(silu(ffn_gate in) * ffn_up in); in and out may be the same view.
  virtual Status ffn(std::uint32_t block, const TensorView& in, const TensorView& out) = 0;
};

// A GGUF file opened by the host (the target, or a drafter's own file).
class WeightFile {
 public:
  virtual ~WeightFile() = default;
  virtual std::string path() const = 0;

  virtual std::optional<std::int64_t> meta_int(std::string_view key) const = 0;
  virtual std::optional<double> meta_real(std::string_view key) const = 0;
  virtual std::optional<std::string> meta_string(std::string_view key) const = 0;
  virtual std::optional<std::vector<std::int64_t>> meta_int_array(std::string_view key) const = 0;
  virtual bool has_tensor(std::string_view name) const = 0;

  // A tensor bound to its format's kernels on the backend (a matrix prepared once; the target's
  // own bound matrices are shared, not copied). A missing tensor or a type without kernels is one
  // line naming the file and tensor.
  virtual Expected<std::unique_ptr<Weight>> weight(std::string_view name) const = 0;
  // A runner for this file's blocks of the given shape (their tensors are bound on first use).
  virtual Expected<std::unique_ptr<BlockRunner>> runner(const BlockShape& shape, std::uint32_t max_rows) const = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
