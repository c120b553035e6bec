// The CUDA backend's kernels, launched on a stream (cuda_ops.cu). Arguments are checked by the
// caller (cuda_backend.cpp, with the CPU backend's checks): these only launch. Each returns the
// launch's cudaError_t as an int so this header needs no CUDA include.
#pragma once

#include <cstddef>
#include <cstdint>

namespace graft::cuda {

// A row-strided f32 tensor as the kernels address it: rows over dimensions 1..3.
struct RowView {
  void* data = nullptr;
  std::int64_t ne0 = 0, ne1 = 1, ne2 = 1, rows = 0;
  std::size_t nb1 = 0, nb2 = 0, nb3 = 0;
};

int launch_rms_norm(void* stream, RowView x, const float* w, float eps, RowView y);
int launch_l2_norm(void* stream, RowView x, float eps, RowView y);
// y = a + b; b has a's rows (broadcast false) or one row for all (broadcast true); all packed.
int launch_add(void* stream, const float* a, const float* b, float* y, std::int64_t n, std::int64_t rows, bool broadcast);
int launch_silu_mul(void* stream, RowView gate, RowView up, RowView y);
int launch_sigmoid_mul(void* stream, RowView x, RowView g, RowView y);
// x, y: [head_dim, n_heads, n_tokens] row-strided; positions: n_tokens (device memory).
int launch_rope(void* stream, RowView x, const std::int32_t* positions, std::int32_t n_rot, bool neox, float freq_scale,
                float theta_scale, RowView y);
// ids [k, rows], values [k, rows] (null: none) = the k largest of each packed row of x [n, rows].
int launch_top_k(void* stream, const float* x, std::int64_t n, std::int64_t rows, std::uint32_t k, std::int32_t* ids,
                 float* values);
// y [n, rows] = the softmax of each packed row of x (y may be x).
int launch_softmax(void* stream, const float* x, std::int64_t n, std::int64_t rows, float* y);

}  // namespace graft::cuda
