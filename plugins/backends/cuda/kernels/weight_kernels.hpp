// The CUDA kernels of the built-in weight formats graft's kernel library "cuda" brings first:
// f32, f16, bf16, q8_0, q4_k, q1_0 (weight_kernels.cu). Weights stay in the file's block layout,
// uploaded once at load; each kernel decodes 32 elements at a time. Arguments are checked by the
// caller (cuda_kernel_library.cpp): these only launch, and return the launch's cudaError_t as an
// int so this header needs no CUDA include.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

// Whether weight_kernels.cu decodes this ggml type id.
bool weight_type_supported(std::uint32_t type) noexcept;

// y[j][r] = sum_e w[r][e] * x[j][e] for r < m, j < n: w rows of k elements (row_bytes each, k a
// multiple of 32), x and y rows ldx and ldy floats apart. Decode (n small) reads each weight row
// once for 8 columns of x; prefill and verify batches repeat that per 8 columns (no tensor cores
// yet).
int launch_weight_matmul(void* stream, std::uint32_t type, const void* w, std::size_t row_bytes, std::int64_t k,
                         std::int64_t m, const float* x, std::int64_t ldx, std::int64_t n, float* y, std::int64_t ldy);

// y[j] = row ids[j] of the table (k elements per row), decoded to f32, for j < n; an id outside
// [0, n_rows) gives a row of NaN (the host checked the token ids it staged).
int launch_weight_get_rows(void* stream, std::uint32_t type, const void* table, std::size_t row_bytes, std::int64_t k,
                           std::int64_t n_rows, const std::int32_t* ids, std::int64_t n, float* y, std::int64_t ldy);

}  // namespace graft::cuda
