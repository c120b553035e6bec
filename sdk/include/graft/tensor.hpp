// Tensors as plugins see them: a typed view of memory that somebody else owns.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// The ggml type id exactly as GGUF stores it per tensor. Weight-format plugins declare which ids
// they handle, so a new id needs no host change.
using TypeId = std::uint32_t;

namespace type_id {
inline constexpr TypeId f32 = 0, f16 = 1, q4_0 = 2, q4_1 = 3, q5_0 = 6, q5_1 = 7, q8_0 = 8,
                        q8_1 = 9, q2_k = 10, q3_k = 11, q4_k = 12, q5_k = 13, q6_k = 14,
                        q8_k = 15, i8 = 24, i16 = 25, i32 = 26, i64 = 27, f64 = 28, bf16 = 30,
                        tq1_0 = 34, tq2_0 = 35, mxfp4 = 39, nvfp4 = 40, q1_0 = 41, q2_0 = 42;
}

// Where a tensor's bytes are. Ops read TensorView::memory: a backend refuses a view it cannot
// read (the CUDA backend a host view, with one line naming the op and the tensor).
enum class MemoryKind : std::uint32_t {
  host = 0,         // pageable system RAM
  pinned_host = 1,  // page-locked system RAM the device can DMA from (KV offload, staging)
  device = 2,       // accelerator memory; on the CPU backend this is host memory
};

// "host memory", "pinned host memory", "device memory": for messages.
inline const char* memory_kind_name(MemoryKind k) noexcept {
  switch (k) {
    case MemoryKind::host: return "host memory";
    case MemoryKind::pinned_host: return "pinned host memory";
    case MemoryKind::device: return "device memory";
  }
  return "memory";
}

inline constexpr int kMaxDims = 4;

// ne[0] is the contiguous row length (GGUF order); nb[] are byte strides. For block-quantized
// types nb[0] is the block size in bytes and rows are whole blocks.
struct TensorView {
  void* data = nullptr;
  TypeId type = type_id::f32;
  std::int32_t n_dims = 1;
  std::array<std::int64_t, kMaxDims> ne{1, 1, 1, 1};
  std::array<std::size_t, kMaxDims> nb{0, 0, 0, 0};
  MemoryKind memory = MemoryKind::host;
  std::int32_t device = 0;

  std::int64_t elements() const noexcept { return ne[0] * ne[1] * ne[2] * ne[3]; }
  std::int64_t rows() const noexcept { return ne[1] * ne[2] * ne[3]; }
  template <class T>
  T* as() const noexcept { return static_cast<T*>(data); }
};

// A contiguous f32 view: the activation layout every backend op uses.
inline TensorView f32_view(float* data, std::int64_t ne0, std::int64_t ne1 = 1, std::int64_t ne2 = 1,
                           MemoryKind memory = MemoryKind::host) {
  TensorView t;
  t.data = data;
  t.type = type_id::f32;
  t.n_dims = ne2 > 1 ? 3 : (ne1 > 1 ? 2 : 1);
  t.ne = {ne0, ne1, ne2, 1};
  t.nb = {sizeof(float), sizeof(float) * static_cast<std::size_t>(ne0),
          sizeof(float) * static_cast<std::size_t>(ne0 * ne1),
          sizeof(float) * static_cast<std::size_t>(ne0 * ne1 * ne2)};
  t.memory = memory;
  return t;
}

// A contiguous f32 view of activations in the backend's device memory (workspaces, KV inputs,
// recurrent state, a drafter's buffers: host memory on the CPU, a GPU's memory the host cannot
// read), labelled so that a device backend takes it.
inline TensorView device_f32(float* data, std::int64_t ne0, std::int64_t ne1 = 1, std::int64_t ne2 = 1) {
  return f32_view(data, ne0, ne1, ne2, MemoryKind::device);
}

// A packed vector of n 32-bit ids, positions or tree parents (i32).
inline TensorView i32_view(std::int32_t* data, std::int64_t n, MemoryKind memory = MemoryKind::host) {
  TensorView t;
  t.data = data;
  t.type = type_id::i32;
  t.ne = {n, 1, 1, 1};
  t.nb = {sizeof(std::int32_t), sizeof(std::int32_t) * static_cast<std::size_t>(n),
          sizeof(std::int32_t) * static_cast<std::size_t>(n), sizeof(std::int32_t) * static_cast<std::size_t>(n)};
  t.memory = memory;
  return t;
}

// A packed [ne0, ne1] matrix of bytes (i8), e.g. a token tree's ancestor mask (0 or 1).
inline TensorView i8_view(std::uint8_t* data, std::int64_t ne0, std::int64_t ne1, MemoryKind memory = MemoryKind::host) {
  TensorView t;
  t.data = data;
  t.type = type_id::i8;
  t.n_dims = 2;
  t.ne = {ne0, ne1, 1, 1};
  t.nb = {1, static_cast<std::size_t>(ne0), static_cast<std::size_t>(ne0 * ne1), static_cast<std::size_t>(ne0 * ne1)};
  t.memory = memory;
  return t;
}

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
