#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "weight_decode.hpp"
#include "weight_kernels.hpp"

namespace graft::cuda {

namespace {

using namespace decode;

constexpr int kCols = 8;          // columns of x per warp
constexpr int kRowsPerBlock = 4;  // weight rows (warps) per block

// One warp per weight row and kCols columns of x: each lane decodes every 32nd chunk of 32
// elements once and multiplies it into all the columns; the lanes' sums meet by shuffles.
template <class Q>
__global__ void matmul_kernel(const std::uint8_t* w, std::size_t row_bytes, int chunks, int m, const float* x,
                              std::int64_t ldx, int n, float* y, std::int64_t ldy) {
  const int row = blockIdx.x * kRowsPerBlock + threadIdx.y;
  if (row >= m) return;
  const int lane = threadIdx.x, j0 = blockIdx.y * kCols, nc = min(kCols, n - j0);
  float acc[kCols] = {};
  float v[32];
  const std::uint8_t* wr = w + static_cast<std::size_t>(row) * row_bytes;
  for (int c = lane; c < chunks; c += 32) {
    Q::decode(wr, c, v);
#pragma unroll
    for (int j = 0; j < kCols; ++j) {
      if (j >= nc) break;
      const float* xr = x + (j0 + j) * ldx + 32 * c;
      float s = 0.0f;
#pragma unroll
      for (int e = 0; e < 32; ++e) s = fmaf(v[e], xr[e], s);
      acc[j] += s;
    }
  }
#pragma unroll
  for (int j = 0; j < kCols; ++j) {
    float s = acc[j];
    for (int off = 16; off > 0; off >>= 1) s += __shfl_down_sync(0xffffffffu, s, off);
    if (lane == 0 && j < nc) y[(j0 + j) * ldy + row] = s;
  }
}

// One block per id; each thread decodes chunks of 32 elements.
template <class Q>
__global__ void get_rows_kernel(const std::uint8_t* table, std::size_t row_bytes, int chunks, std::int64_t n_rows,
                                const std::int32_t* ids, float* y, std::int64_t ldy) {
  const std::int32_t id = ids[blockIdx.x];
  float* out = y + blockIdx.x * ldy;
  float v[32];
  for (int c = threadIdx.x; c < chunks; c += blockDim.x) {
    if (id < 0 || id >= n_rows) {
      for (int e = 0; e < 32; ++e) out[32 * c + e] = NAN;
      continue;
    }
    Q::decode(table + static_cast<std::size_t>(id) * row_bytes, c, v);
    for (int e = 0; e < 32; ++e) out[32 * c + e] = v[e];
  }
}

template <class Q>
int matmul(cudaStream_t s, const void* w, std::size_t row_bytes, std::int64_t k, std::int64_t m, const float* x,
           std::int64_t ldx, std::int64_t n, float* y, std::int64_t ldy) {
  const dim3 block(32, kRowsPerBlock);
  const dim3 grid(static_cast<unsigned>((m + kRowsPerBlock - 1) / kRowsPerBlock), static_cast<unsigned>((n + kCols - 1) / kCols));
  matmul_kernel<Q><<<grid, block, 0, s>>>(static_cast<const std::uint8_t*>(w), row_bytes, static_cast<int>(k / 32),
                                          static_cast<int>(m), x, ldx, static_cast<int>(n), y, ldy);
  return static_cast<int>(cudaGetLastError());
}

template <class Q>
int get_rows(cudaStream_t s, const void* table, std::size_t row_bytes, std::int64_t k, std::int64_t n_rows,
             const std::int32_t* ids, std::int64_t n, float* y, std::int64_t ldy) {
  get_rows_kernel<Q><<<static_cast<unsigned>(n), 128, 0, s>>>(static_cast<const std::uint8_t*>(table), row_bytes,
                                                              static_cast<int>(k / 32), n_rows, ids, y, ldy);
  return static_cast<int>(cudaGetLastError());
}

}  // namespace

bool weight_type_supported(std::uint32_t type) noexcept {
  return type == kF32 || type == kF16 || type == kBF16 || type == kQ8_0 || type == kQ4_K || type == kQ1_0;
}

int launch_weight_matmul(void* stream, std::uint32_t type, const void* w, std::size_t row_bytes, std::int64_t k,
                         std::int64_t m, const float* x, std::int64_t ldx, std::int64_t n, float* y, std::int64_t ldy) {
  if (m == 0 || n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case kF32: return matmul<F32>(s, w, row_bytes, k, m, x, ldx, n, y, ldy);
    case kF16: return matmul<F16>(s, w, row_bytes, k, m, x, ldx, n, y, ldy);
    case kBF16: return matmul<BF16>(s, w, row_bytes, k, m, x, ldx, n, y, ldy);
    case kQ8_0: return matmul<Q8_0>(s, w, row_bytes, k, m, x, ldx, n, y, ldy);
    case kQ4_K: return matmul<Q4_K>(s, w, row_bytes, k, m, x, ldx, n, y, ldy);
    case kQ1_0: return matmul<Q1_0>(s, w, row_bytes, k, m, x, ldx, n, y, ldy);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

int launch_weight_get_rows(void* stream, std::uint32_t type, const void* table, std::size_t row_bytes, std::int64_t k,
                           std::int64_t n_rows, const std::int32_t* ids, std::int64_t n, float* y, std::int64_t ldy) {
  if (n == 0) return 0;
  auto s = static_cast<cudaStream_t>(stream);
  switch (type) {
    case kF32: return get_rows<F32>(s, table, row_bytes, k, n_rows, ids, n, y, ldy);
    case kF16: return get_rows<F16>(s, table, row_bytes, k, n_rows, ids, n, y, ldy);
    case kBF16: return get_rows<BF16>(s, table, row_bytes, k, n_rows, ids, n, y, ldy);
    case kQ8_0: return get_rows<Q8_0>(s, table, row_bytes, k, n_rows, ids, n, y, ldy);
    case kQ4_K: return get_rows<Q4_K>(s, table, row_bytes, k, n_rows, ids, n, y, ldy);
    case kQ1_0: return get_rows<Q1_0>(s, table, row_bytes, k, n_rows, ids, n, y, ldy);
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace graft::cuda
