// The CPU attention kernel over one layer of the device store, with its shape checks.
#pragma once

#include <cstdint>

#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft::kv {

enum class CacheType { f32, f16 };

// One layer's cache: K and V, each [capacity][n_kv_heads][head_dim] in `type`.
struct LayerCache {
  const void* k = nullptr;
  const void* v = nullptr;
  CacheType type = CacheType::f16;
  std::uint32_t n_kv_heads = 0;
  std::uint32_t head_dim_k = 0;
  std::uint32_t head_dim_v = 0;
};

// out = softmax(q k^T * scale, mask) v for q [head_dim_k, n_heads, n_query] and
// out [head_dim_v, n_heads, n_query]; the caller has checked that slots [0, n_past + n_query) of
// `cache` are filled. Shape errors come back as Errc::invalid_argument naming the argument.
// The mask and window rules are documented in docs/kvstores.md. Work is split over
// (query, kv head) pairs; each pair's result does not depend on the thread count.
Status attend(Backend& backend, const LayerCache& cache, const TensorView& q, const AttentionBatch& batch,
              const TensorView& out);

}  // namespace graft::kv
