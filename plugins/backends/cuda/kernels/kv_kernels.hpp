// The `device` KV store's kernels on CUDA (kv_kernels.cu): K/V in f16 or f32, one buffer per layer
// for K and one for V, each [n_kv_heads][capacity][head_dim] as on the CPU. Arguments are checked
// by the caller (cuda_kernel_library.cpp): these only launch, and return the launch's cudaError_t
// as an int so this header needs no CUDA include.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

// A row-strided f32 tensor [dim, heads, tokens]: element (e, h, t) at data + h * nb1 + t * nb2 bytes.
struct HeadRows {
  const void* data = nullptr;
  std::size_t nb1 = 0, nb2 = 0;
};

struct KvLayer {
  void* k = nullptr;
  void* v = nullptr;
  bool f16 = true;  // element type: f16, else f32
  std::uint32_t heads = 0, dim_k = 0, dim_v = 0, capacity = 0;
};

// Slots [slot, slot + n) of every head take rows t of k and v.
int launch_kv_write(void* stream, KvLayer layer, std::uint32_t slot, std::uint32_t n, HeadRows k, HeadRows v);

// out (n_heads [dim_v] rows per query) = softmax(q k^T * scale) v over the slots each query sees:
// [0, n_past), then batch entry j (slot n_past + j) where ancestor (i8 [n_query, n_query] in device
// memory) has ancestor[i * n_query + j] != 0, or j <= i when ancestor is null. A query that sees no
// slot gets zeros. Query head h reads KV head h / (n_heads / heads).
int launch_attention(void* stream, KvLayer layer, HeadRows q, std::uint32_t n_heads, std::uint32_t n_query,
                     std::uint32_t n_past, const std::uint8_t* ancestor, float scale, HeadRows out);

// Slot src[i] moves to dst + i for i < n in every head of the layer, in ascending order (src
// ascending, src[i] >= dst + i, so no slot is overwritten before it has moved); src in device memory.
int launch_kv_compact(void* stream, KvLayer layer, std::uint32_t dst, const std::uint32_t* src, std::uint32_t n);

}  // namespace graft::cuda
