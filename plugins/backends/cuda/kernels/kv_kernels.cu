#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cfloat>
#include <cstdint>

#include "kv_kernels.hpp"

namespace graft::cuda {

namespace {

constexpr int kMaxDim = 256;  // head_dim a kernel takes (checked by the caller)
constexpr int kThreads = 128;
constexpr int kChunk = 32;    // slots scored at once

template <class T>
__device__ __forceinline__ float load(const T* p);
template <>
__device__ __forceinline__ float load<float>(const float* p) { return *p; }
template <>
__device__ __forceinline__ float load<__half>(const __half* p) { return __half2float(*p); }
template <class T>
__device__ __forceinline__ void store(T* p, float v);
template <>
__device__ __forceinline__ void store<float>(float* p, float v) { *p = v; }
template <>
__device__ __forceinline__ void store<__half>(__half* p, float v) { *p = __float2half_rn(v); }

__device__ __forceinline__ const float* head_row(HeadRows r, std::uint32_t h, std::uint32_t t) {
  return reinterpret_cast<const float*>(static_cast<const char*>(r.data) + h * r.nb1 + t * r.nb2);
}

// One block per (token, head): its K and V rows into their slot.
template <class T>
__global__ void write_kernel(KvLayer L, std::uint32_t slot, HeadRows k, HeadRows v) {
  const std::uint32_t t = blockIdx.x, h = blockIdx.y;
  const std::size_t at = static_cast<std::size_t>(h) * L.capacity + slot + t;
  const float* ks = head_row(k, h, t);
  const float* vs = head_row(v, h, t);
  T* kd = static_cast<T*>(L.k) + at * L.dim_k;
  T* vd = static_cast<T*>(L.v) + at * L.dim_v;
  for (std::uint32_t e = threadIdx.x; e < L.dim_k; e += blockDim.x) store(kd + e, ks[e]);
  for (std::uint32_t e = threadIdx.x; e < L.dim_v; e += blockDim.x) store(vd + e, vs[e]);
}

// One block per (query, head): the slots it sees in chunks of 32, each chunk's scores by the four
// warps (a warp-wide dot product per slot), then an online softmax: the running maximum and sum,
// and each thread's output dimensions rescaled and accumulated.
template <class T>
__global__ void attention_kernel(KvLayer L, HeadRows q, std::uint32_t n_heads, std::uint32_t n_query,
                                 std::uint32_t n_past, const std::uint8_t* ancestor, float scale, HeadRows out) {
  const std::uint32_t i = blockIdx.x, h = blockIdx.y, kvh = h / (n_heads / L.heads);
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  __shared__ float qs[kMaxDim];
  __shared__ float score[kChunk];
  __shared__ bool seen[kChunk];
  const float* qr = head_row(q, h, i);
  for (std::uint32_t e = tid; e < L.dim_k; e += kThreads) qs[e] = qr[e];
  __syncthreads();
  const T* kb = static_cast<const T*>(L.k) + static_cast<std::size_t>(kvh) * L.capacity * L.dim_k;
  const T* vb = static_cast<const T*>(L.v) + static_cast<std::size_t>(kvh) * L.capacity * L.dim_v;
  const std::uint32_t end = n_past + (ancestor ? n_query : i + 1);
  float acc[kMaxDim / kThreads] = {};
  float run_max = -FLT_MAX, run_sum = 0.0f;
  for (std::uint32_t base = 0; base < end; base += kChunk) {
    for (int c = warp; c < kChunk; c += kThreads / 32) {
      const std::uint32_t s = base + c;
      bool visible = s < end;
      if (visible && s >= n_past && ancestor) visible = ancestor[static_cast<std::size_t>(i) * n_query + (s - n_past)] != 0;
      float dot = 0.0f;
      if (visible) {
        const T* kr = kb + static_cast<std::size_t>(s) * L.dim_k;
        for (std::uint32_t e = lane; e < L.dim_k; e += 32) dot = fmaf(qs[e], load(kr + e), dot);
        for (int off = 16; off > 0; off >>= 1) dot += __shfl_down_sync(0xffffffffu, dot, off);
      }
      if (lane == 0) {
        score[c] = dot * scale;
        seen[c] = visible;
      }
    }
    __syncthreads();
    float chunk_max = -FLT_MAX;
    for (int c = 0; c < kChunk; ++c)
      if (seen[c]) chunk_max = fmaxf(chunk_max, score[c]);
    if (chunk_max > -FLT_MAX) {
      const float new_max = fmaxf(run_max, chunk_max);
      const float rescale = run_sum > 0.0f ? expf(run_max - new_max) : 0.0f;
      run_sum *= rescale;
      for (int d = 0; d < kMaxDim / kThreads; ++d) acc[d] *= rescale;
      for (int c = 0; c < kChunk; ++c) {
        if (!seen[c]) continue;
        const float p = expf(score[c] - new_max);
        run_sum += p;
        const T* vr = vb + static_cast<std::size_t>(base + c) * L.dim_v;
        for (int d = 0; d < kMaxDim / kThreads; ++d) {
          const std::uint32_t e = tid + d * kThreads;
          if (e < L.dim_v) acc[d] = fmaf(p, load(vr + e), acc[d]);
        }
      }
      run_max = new_max;
    }
    __syncthreads();
  }
  float* o = const_cast<float*>(head_row(out, h, i));
  const float inv = run_sum > 0.0f ? 1.0f / run_sum : 0.0f;
  for (int d = 0; d < kMaxDim / kThreads; ++d) {
    const std::uint32_t e = tid + d * kThreads;
    if (e < L.dim_v) o[e] = acc[d] * inv;
  }
}

// One block per head: the slots move one after another (ascending, as memmove), the threads
// sharing each slot's elements.
template <class T>
__global__ void compact_kernel(KvLayer L, std::uint32_t dst, const std::uint32_t* src, std::uint32_t n) {
  const std::uint32_t h = blockIdx.x;
  T* kb = static_cast<T*>(L.k) + static_cast<std::size_t>(h) * L.capacity * L.dim_k;
  T* vb = static_cast<T*>(L.v) + static_cast<std::size_t>(h) * L.capacity * L.dim_v;
  for (std::uint32_t i = 0; i < n; ++i) {
    const std::uint32_t from = src[i], to = dst + i;
    if (from != to) {
      for (std::uint32_t e = threadIdx.x; e < L.dim_k; e += blockDim.x)
        kb[std::size_t(to) * L.dim_k + e] = kb[std::size_t(from) * L.dim_k + e];
      for (std::uint32_t e = threadIdx.x; e < L.dim_v; e += blockDim.x)
        vb[std::size_t(to) * L.dim_v + e] = vb[std::size_t(from) * L.dim_v + e];
    }
    __syncthreads();
  }
}

}  // namespace

int launch_kv_write(void* stream, KvLayer L, std::uint32_t slot, std::uint32_t n, HeadRows k, HeadRows v) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(n, L.heads);
  if (L.f16) write_kernel<__half><<<grid, kThreads, 0, s>>>(L, slot, k, v);
  else write_kernel<float><<<grid, kThreads, 0, s>>>(L, slot, k, v);
  return static_cast<int>(cudaGetLastError());
}

int launch_attention(void* stream, KvLayer L, HeadRows q, std::uint32_t n_heads, std::uint32_t n_query,
                     std::uint32_t n_past, const std::uint8_t* ancestor, float scale, HeadRows out) {
  if (n_query == 0) return 0;
  if (L.dim_k > kMaxDim || L.dim_v > kMaxDim) return static_cast<int>(cudaErrorInvalidValue);
  auto s = static_cast<cudaStream_t>(stream);
  const dim3 grid(n_query, n_heads);
  if (L.f16) attention_kernel<__half><<<grid, kThreads, 0, s>>>(L, q, n_heads, n_query, n_past, ancestor, scale, out);
  else attention_kernel<float><<<grid, kThreads, 0, s>>>(L, q, n_heads, n_query, n_past, ancestor, scale, out);
  return static_cast<int>(cudaGetLastError());
}

int launch_kv_compact(void* stream, KvLayer L, std::uint32_t dst, const std::uint32_t* src, std::uint32_t n) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  if (L.f16) compact_kernel<__half><<<L.heads, kThreads, 0, s>>>(L, dst, src, n);
  else compact_kernel<float><<<L.heads, kThreads, 0, s>>>(L, dst, src, n);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace graft::cuda
