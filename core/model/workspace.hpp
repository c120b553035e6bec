// The activations of one forward pass, sized for up to max_batch rows: what a forward call
// writes and reads between its steps. A Workspace belongs to whoever runs forward passes (a
// Session, or a batch over several sessions); the Model it serves is immutable and shared.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "graft/backend.hpp"
#include "graft/status.hpp"

namespace graft {

class Model;

class Workspace {
 public:
  std::uint32_t max_batch() const { return max_batch_; }
  std::uint64_t bytes() const { return bytes_; }

 private:
  friend class Model;
  Workspace() = default;

  std::uint32_t max_batch_ = 0;
  std::uint64_t bytes_ = 0;
  std::unique_ptr<Buffer> buffer_;
  // Backend memory, rows token-major. q, k, v and up serve layers whose projections are separate;
  // qkv ([row][q | k | v]) and gate_up ([row][gate | up]) the stacked ones. gate is SwiGLU's output
  // either way. logits holds one lm_head chunk.
  float *x = nullptr, *h = nullptr, *q = nullptr, *k = nullptr, *v = nullptr, *attn = nullptr, *gate = nullptr,
        *up = nullptr, *qkv = nullptr, *gate_up = nullptr, *logits = nullptr;
  std::vector<std::int32_t> positions;  // host: the batch's RoPE positions when the caller gave none
};

}  // namespace graft
