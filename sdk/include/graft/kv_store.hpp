// A KV store owns the attention K/V of one sequence and the attention over it, so a quantized or
// offloaded layout brings its own kernels. Slots are token positions in commit order; speculative
// rounds write candidate tokens after the committed ones and then truncate or compact.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "graft/backend.hpp"
#include "graft/config.hpp"
#include "graft/plugin_object.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

struct KvGeometry {
  std::uint32_t n_layers = 0;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim_k = 0;
  std::uint32_t head_dim_v = 0;
  std::uint32_t capacity = 0;  // tokens
};

struct KvMemory {
  std::uint64_t device_bytes = 0;
  std::uint64_t host_bytes = 0;
};

// Which cached slots each query row may attend to.
struct AttentionBatch {
  std::uint32_t n_query = 0;
  // Slots [0, n_past) are the committed prefix, visible to every query.
  std::uint32_t n_past = 0;
  // Query i sits at slot n_past + i. With ancestor.data == nullptr it sees slots n_past..n_past+i
  // (causal); otherwise it sees n_past + j exactly where ancestor[i * n_query + j] != 0 (a token
  // tree: a node sees itself and its ancestors): i8 [n_query, n_query] in backend memory.
  TensorView ancestor{};
  float scale = 1.0f;               // usually 1/sqrt(head_dim)
  std::uint32_t sliding_window = 0; // 0: unlimited
};

// size() is the number of slots filled in every layer: a forward pass writes layers 0..L-1 at the
// same slots and size() rises when the last layer is written. Overwriting slot s keeps slots > s.
// A query that may see no slot gets zeros. A store must be destroyed before its backend.
class KvStore {
 public:
  virtual ~KvStore() = default;

  virtual KvGeometry geometry() const noexcept = 0;
  // Number of filled slots.
  virtual std::uint32_t size() const noexcept = 0;
  // True when attend() reproduces exact f32 attention over what was written.
  virtual bool lossless() const noexcept = 0;
  virtual KvMemory memory() const noexcept = 0;

  // Writes n tokens' K [head_dim_k, n_kv_heads, n] and V [head_dim_v, n_kv_heads, n] (f32) for
  // one layer into slots [slot, slot + n). slot may be at most size().
  virtual Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
                       const TensorView& v) = 0;
  // out [head_dim_v, n_heads, n_query] = softmax(q k^T * scale, masked) v for one layer;
  // q is [head_dim_k, n_heads, n_query] with n_heads a multiple of n_kv_heads (GQA).
  virtual Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& batch,
                        const TensorView& out) = 0;

  // Rollback: drop every slot >= n.
  virtual Status truncate(std::uint32_t n) = 0;
  // Tree acceptance: copy slots src[i] to dst + i (src ascending, src[i] >= dst + i), then the
  // size becomes dst + src.size().
  virtual Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) = 0;
};

// A KV-store plugin's factory makes the stores of the backends it computes on itself and hands the
// others to the kernel library of that backend that implements its store
// (HostServices::kv_store_library): one profile name, a layout per backend. A backend with
// neither is one line naming the store and the backend.
class KvStoreFactory : public PluginObject {
 public:
  // K + V of one token over all layers, wherever they are kept.
  virtual std::uint64_t bytes_per_token(const KvGeometry& g) const noexcept = 0;
  // What create(backend, g) will hold, said before anything is allocated (the memory plan, which
  // may run without the backend's device): bytes in the backend's memory and in system RAM for
  // g.capacity tokens, or the error create would give for this backend and geometry (a head size
  // its type cannot hold, an offload on a backend with one memory, a budget it exceeds). The
  // default: bytes_per_token(g) x g.capacity in backend memory, refusing nothing.
  virtual Expected<KvMemory> plan(Backend& backend, const KvGeometry& g) const {
    (void)backend;
    return KvMemory{bytes_per_token(g) * g.capacity, 0};
  }
  virtual Expected<std::unique_ptr<KvStore>> create(Backend& backend, const KvGeometry& g) = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
