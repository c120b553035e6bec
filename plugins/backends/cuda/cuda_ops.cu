// The CUDA backend's generic ops. Bits follow docs/backends.md "What the CUDA backend must match":
// a row's result never depends on the launch (one block per row, a fixed reduction tree whose shape
// depends only on the block size), reductions sum in double as the CPU's do, no atomics, and the
// file is compiled with -fmad=false so nothing is contracted to an FMA the CPU does not do.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>

#include "cuda_ops.hpp"
#include "top_k_key.hpp"

namespace graft::cuda {

namespace {

constexpr int kBlock = 256;  // threads per row for the reductions: fixes the reduction tree

__device__ __forceinline__ float* row_of(const RowView& t, std::int64_t r) {
  const std::int64_t i1 = r % t.ne1, i2 = (r / t.ne1) % t.ne2, i3 = r / (t.ne1 * t.ne2);
  return reinterpret_cast<float*>(static_cast<char*>(t.data) + i1 * t.nb1 + i2 * t.nb2 + i3 * t.nb3);
}

// Sum over the block of one double per thread, in a fixed tree; every thread gets the total.
__device__ double block_sum(double v) {
  __shared__ double part[kBlock];
  part[threadIdx.x] = v;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) part[threadIdx.x] += part[threadIdx.x + s];
    __syncthreads();
  }
  const double total = part[0];
  __syncthreads();
  return total;
}

__global__ void rms_norm_kernel(RowView x, const float* w, float eps, RowView y) {
  const float* xr = row_of(x, blockIdx.x);
  float* yr = row_of(y, blockIdx.x);
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < x.ne0; i += kBlock) s += double(xr[i]) * double(xr[i]);
  const double total = block_sum(s);
  const float mean = static_cast<float>(total / static_cast<double>(x.ne0));
  const float scale = 1.0f / sqrtf(mean + eps);
  for (std::int64_t i = threadIdx.x; i < x.ne0; i += kBlock) yr[i] = (xr[i] * scale) * w[i];
}

__global__ void l2_norm_kernel(RowView x, float eps, RowView y) {
  const float* xr = row_of(x, blockIdx.x);
  float* yr = row_of(y, blockIdx.x);
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < x.ne0; i += kBlock) s += double(xr[i]) * double(xr[i]);
  const double total = block_sum(s);
  const float norm = fmaxf(static_cast<float>(sqrt(total)), eps);
  for (std::int64_t i = threadIdx.x; i < x.ne0; i += kBlock) yr[i] = xr[i] / norm;
}

__global__ void add_kernel(const float* a, const float* b, float* y, std::int64_t n, std::int64_t total, bool broadcast) {
  for (std::int64_t i = blockIdx.x * std::int64_t(blockDim.x) + threadIdx.x; i < total; i += std::int64_t(gridDim.x) * blockDim.x)
    y[i] = a[i] + b[broadcast ? i % n : i];
}

__global__ void silu_mul_kernel(RowView gate, RowView up, RowView y) {
  const float* g = row_of(gate, blockIdx.x);
  const float* u = row_of(up, blockIdx.x);
  float* o = row_of(y, blockIdx.x);
  for (std::int64_t i = threadIdx.x; i < gate.ne0; i += blockDim.x) {
    const float v = g[i];
    o[i] = v / (1.0f + expf(-v)) * u[i];
  }
}

__global__ void sigmoid_mul_kernel(RowView x, RowView g, RowView y) {
  const float* xr = row_of(x, blockIdx.x);
  const float* gr = row_of(g, blockIdx.x);
  float* o = row_of(y, blockIdx.x);
  for (std::int64_t i = threadIdx.x; i < x.ne0; i += blockDim.x) o[i] = xr[i] / (1.0f + expf(-gr[i]));
}

// One block per (head, token) row; thread i rotates pair i. The angle follows the CPU's float
// recurrence (theta multiplied by theta_scale once per pair), recomputed per pair.
__global__ void rope_kernel(RowView x, const std::int32_t* positions, std::int32_t n_rot, bool neox, float freq_scale,
                            float theta_scale, RowView y) {
  const std::int64_t r = blockIdx.x;
  const std::int64_t token = r / x.ne1;
  const float* xr = row_of(x, r);
  float* yr = row_of(y, r);
  const int n_pairs = n_rot / 2;
  for (int i = threadIdx.x; i < n_pairs; i += blockDim.x) {
    float theta = static_cast<float>(positions[token]);
    for (int j = 0; j < i; ++j) theta *= theta_scale;
    const float a = freq_scale * theta;
    const float c = cosf(a), s = sinf(a);
    const int i0 = neox ? i : 2 * i, i1 = neox ? i + n_pairs : 2 * i + 1;
    const float x0 = xr[i0], x1 = xr[i1];
    yr[i0] = x0 * c - x1 * s;
    yr[i1] = x0 * s + x1 * c;
  }
  for (std::int64_t i = n_rot + threadIdx.x; i < x.ne0; i += blockDim.x) yr[i] = xr[i];  // the unrotated tail
}

// The total order of top_k: larger first, the lower index among equal values, NaN after all.
__device__ __forceinline__ bool before(float a, std::int32_t i, float b, std::int32_t j) {
  const bool na = isnan(a), nb = isnan(b);
  if (na != nb) return nb;
  if (!na && a != b) return a > b;
  return i < j;
}

// One block per row: k rounds, each the best entry after the last round's winner in the order
// (a block-wide reduction with a fixed tree), so the result is the same whatever the launch.
__global__ void top_k_kernel(const float* x, std::int64_t n, std::uint32_t k, std::int32_t* ids, float* values) {
  __shared__ float best_v[kBlock];
  __shared__ std::int32_t best_i[kBlock];
  const float* row = x + blockIdx.x * n;
  float prev_v = 0.0f;
  std::int32_t prev_i = -1;
  for (std::uint32_t round = 0; round < k; ++round) {
    float bv = 0.0f;
    std::int32_t bi = -1;
    for (std::int64_t e = threadIdx.x; e < n; e += kBlock) {
      const float v = row[e];
      const auto i = static_cast<std::int32_t>(e);
      if (prev_i >= 0 && !before(prev_v, prev_i, v, i)) continue;  // taken in an earlier round
      if (bi < 0 || before(v, i, bv, bi)) bv = v, bi = i;
    }
    best_v[threadIdx.x] = bv;
    best_i[threadIdx.x] = bi;
    __syncthreads();
    for (int s = kBlock / 2; s > 0; s >>= 1) {
      if (threadIdx.x < s) {
        const float ov = best_v[threadIdx.x + s];
        const std::int32_t oi = best_i[threadIdx.x + s];
        if (oi >= 0 && (best_i[threadIdx.x] < 0 || before(ov, oi, best_v[threadIdx.x], best_i[threadIdx.x])))
          best_v[threadIdx.x] = ov, best_i[threadIdx.x] = oi;
      }
      __syncthreads();
    }
    prev_v = best_v[0];
    prev_i = best_i[0];
    if (threadIdx.x == 0) {
      ids[blockIdx.x * k + round] = prev_i;
      if (values) values[blockIdx.x * k + round] = prev_v;
    }
    __syncthreads();
  }
}

// top_k for larger k (sampling's candidates: 40 of a 152K vocabulary): a radix select instead of
// k passes over the row. Four passes of a 256-bin histogram over the keys' bytes (high to low)
// find the k-th key T and how many entries equal to it are wanted; a fifth pass places the
// entries above T and those lowest-index ties; the k placed are then ranked in top_k's order. One
// block per row; cand (dynamic shared memory) holds k keys, then k indices.
__global__ void top_k_select_kernel(const float* x, std::int64_t n, std::uint32_t k, std::int32_t* ids,
                                    float* values) {
  extern __shared__ std::uint32_t cand[];
  std::uint32_t* cand_key = cand;
  auto* cand_idx = reinterpret_cast<std::int32_t*>(cand + k);
  __shared__ std::uint32_t hist[256];
  __shared__ std::uint32_t warp_ties[kBlock / 32];
  __shared__ std::uint32_t s_digit, s_remaining, s_ties, s_placed;
  const float* row = x + blockIdx.x * n;
  const unsigned lane = threadIdx.x & 31u, warp = threadIdx.x >> 5;
  // prefix/mask: the bytes of T found so far; remaining: how many entries with that prefix are
  // still wanted; ties: how many entries have it.
  std::uint32_t prefix = 0, mask = 0, remaining = k, ties = 0;
  for (int shift = 24; shift >= 0; shift -= 8) {
    for (unsigned b = threadIdx.x; b < 256; b += kBlock) hist[b] = 0;
    __syncthreads();
    for (std::int64_t base = 0; base < n; base += kBlock) {  // uniform trip count: whole warps below
      const std::int64_t e = base + threadIdx.x;
      const std::uint32_t key = e < n ? top_k_key(row[e]) : 0u;
      const bool in = e < n && (key & mask) == prefix;
      const std::uint32_t bin = in ? (key >> shift) & 255u : 256u;
      // One atomic per distinct bin in the warp: logits crowd into a few bins.
      const unsigned peers = __match_any_sync(0xffffffffu, bin);
      if (in && lane == static_cast<unsigned>(__ffs(peers) - 1))
        atomicAdd(&hist[bin], static_cast<std::uint32_t>(__popc(peers)));
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      std::uint32_t above = 0;
      unsigned d = 255;
      for (; d > 0 && above + hist[d] < remaining; --d) above += hist[d];
      s_digit = d;
      s_remaining = remaining - above;
      s_ties = hist[d];
    }
    __syncthreads();
    prefix |= s_digit << shift;
    mask |= 255u << shift;
    remaining = s_remaining;
    ties = s_ties;
    __syncthreads();
  }
  const std::uint32_t T = prefix, greater = k - remaining;
  if (threadIdx.x == 0) s_placed = 0;
  __syncthreads();
  if (ties == remaining) {  // every entry equal to T is wanted: place them as they come
    for (std::int64_t e = threadIdx.x; e < n; e += kBlock) {
      const std::uint32_t key = top_k_key(row[e]);
      if (key >= T) {
        const std::uint32_t at = atomicAdd(&s_placed, 1u);
        cand_key[at] = key;
        cand_idx[at] = static_cast<std::int32_t>(e);
      }
    }
  } else {  // more ties than places: the lowest indices, counted tile by tile in row order
    std::uint32_t taken = 0;  // ties in earlier tiles (the same in every thread)
    for (std::int64_t base = 0; base < n; base += kBlock) {
      const std::int64_t e = base + threadIdx.x;
      const std::uint32_t key = e < n ? top_k_key(row[e]) : 0u;
      if (e < n && key > T) {
        const std::uint32_t at = atomicAdd(&s_placed, 1u);
        cand_key[at] = key;
        cand_idx[at] = static_cast<std::int32_t>(e);
      }
      const bool tie = e < n && key == T;
      const unsigned ballot = __ballot_sync(0xffffffffu, tie);
      if (lane == 0) warp_ties[warp] = static_cast<std::uint32_t>(__popc(ballot));
      __syncthreads();
      std::uint32_t before = 0, tile = 0;
      for (unsigned w = 0; w < kBlock / 32; ++w) {
        before += w < warp ? warp_ties[w] : 0u;
        tile += warp_ties[w];
      }
      const std::uint32_t rank = taken + before + static_cast<std::uint32_t>(__popc(ballot & ((1u << lane) - 1u)));
      if (tie && rank < remaining) {
        cand_key[greater + rank] = T;
        cand_idx[greater + rank] = static_cast<std::int32_t>(e);
      }
      taken += tile;
      __syncthreads();  // warp_ties is rewritten by the next tile
    }
  }
  __syncthreads();
  // Each entry's place: the entries before it in top_k's order (keys and indices are distinct pairs).
  for (std::uint32_t i = threadIdx.x; i < k; i += kBlock) {
    const std::uint32_t ki = cand_key[i];
    const std::int32_t ii = cand_idx[i];
    std::uint32_t place = 0;
    for (std::uint32_t j = 0; j < k; ++j) place += cand_key[j] > ki || (cand_key[j] == ki && cand_idx[j] < ii);
    ids[blockIdx.x * k + place] = ii;
    if (values) values[blockIdx.x * k + place] = row[ii];
  }
}

// Up to this k, k passes of top_k_kernel cost no more than the select's five; above kMaxSelectK the
// select's shared memory would grow past 8 KiB.
constexpr std::uint32_t kRoundsMaxK = 4, kMaxSelectK = 1024;

int result() { return static_cast<int>(cudaGetLastError()); }
cudaStream_t as_stream(void* s) { return static_cast<cudaStream_t>(s); }
unsigned blocks(std::int64_t rows) { return static_cast<unsigned>(rows); }

}  // namespace

int launch_rms_norm(void* stream, RowView x, const float* w, float eps, RowView y) {
  if (x.rows == 0) return 0;
  rms_norm_kernel<<<blocks(x.rows), kBlock, 0, as_stream(stream)>>>(x, w, eps, y);
  return result();
}

int launch_l2_norm(void* stream, RowView x, float eps, RowView y) {
  if (x.rows == 0) return 0;
  l2_norm_kernel<<<blocks(x.rows), kBlock, 0, as_stream(stream)>>>(x, eps, y);
  return result();
}

int launch_add(void* stream, const float* a, const float* b, float* y, std::int64_t n, std::int64_t rows, bool broadcast) {
  const std::int64_t total = n * rows;
  if (total == 0) return 0;
  const auto grid = static_cast<unsigned>(std::min<std::int64_t>((total + 255) / 256, 65535));
  add_kernel<<<grid, 256, 0, as_stream(stream)>>>(a, b, y, n, total, broadcast);
  return result();
}

int launch_silu_mul(void* stream, RowView gate, RowView up, RowView y) {
  if (gate.rows == 0) return 0;
  silu_mul_kernel<<<blocks(gate.rows), 256, 0, as_stream(stream)>>>(gate, up, y);
  return result();
}

int launch_sigmoid_mul(void* stream, RowView x, RowView g, RowView y) {
  if (x.rows == 0) return 0;
  sigmoid_mul_kernel<<<blocks(x.rows), 256, 0, as_stream(stream)>>>(x, g, y);
  return result();
}

int launch_rope(void* stream, RowView x, const std::int32_t* positions, std::int32_t n_rot, bool neox, float freq_scale,
                float theta_scale, RowView y) {
  if (x.rows == 0) return 0;
  rope_kernel<<<blocks(x.rows), 64, 0, as_stream(stream)>>>(x, positions, n_rot, neox, freq_scale, theta_scale, y);
  return result();
}

// One block per row: the largest number (NaN ignored) by a fixed tree, f32 exponentials, their sum
// in double by block_sum's fixed tree (the CPU sums in index order: the same within rounding), one
// f32 reciprocal.
__global__ void softmax_kernel(const float* x, std::int64_t n, float* y) {
  __shared__ float part[kBlock];
  const float* in = x + blockIdx.x * n;
  float* out = y + blockIdx.x * n;
  float m = -INFINITY;
  bool any = false;
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock)
    if (!isnan(in[i]) && (!any || in[i] > m)) m = in[i], any = true;
  part[threadIdx.x] = any ? m : NAN;
  __syncthreads();
  for (int s = kBlock / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      const float o = part[threadIdx.x + s];
      if (!isnan(o) && (isnan(part[threadIdx.x]) || o > part[threadIdx.x])) part[threadIdx.x] = o;
    }
    __syncthreads();
  }
  const float mx = part[0];
  __syncthreads();
  double s = 0;
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) {
    const float e = expf(in[i] - mx);
    out[i] = e;
    s += e;
  }
  const float inv = static_cast<float>(1.0 / block_sum(s));
  for (std::int64_t i = threadIdx.x; i < n; i += kBlock) out[i] *= inv;
}

int launch_softmax(void* stream, const float* x, std::int64_t n, std::int64_t rows, float* y) {
  if (rows == 0) return 0;
  softmax_kernel<<<blocks(rows), kBlock, 0, as_stream(stream)>>>(x, n, y);
  return result();
}

int launch_top_k(void* stream, const float* x, std::int64_t n, std::int64_t rows, std::uint32_t k, std::int32_t* ids,
                 float* values) {
  if (rows == 0) return 0;
  if (k <= kRoundsMaxK || k > kMaxSelectK) {
    top_k_kernel<<<blocks(rows), kBlock, 0, as_stream(stream)>>>(x, n, k, ids, values);
  } else {
    const std::size_t shared = 2 * std::size_t(k) * sizeof(std::uint32_t);  // keys and indices
    top_k_select_kernel<<<blocks(rows), kBlock, shared, as_stream(stream)>>>(x, n, k, ids, values);
  }
  return result();
}

}  // namespace graft::cuda
