// The orthonormal rotation applied to each head's K and V rows before a rotated cache type (tq3)
// quantizes them: R = H S / sqrt(d), with H the d x d Walsh-Hadamard matrix (d a power of two) and
// S a fixed diagonal of signs. Rotating spreads a row's energy evenly over its elements, so a
// fixed codebook fits every block. Attention over a rotated K rotates each query row the same way
// (R q . R k = q . k); over a rotated V the output is R times the true one and is un-rotated once
// (R^-1 = S H / sqrt(d)), after the softmax-weighted sum.
#pragma once

#include <cstdint>

namespace graft::kv {

// The largest rotated row: the store rotates rows in a buffer on the stack (no allocation on a
// pool thread); head sizes are 64-256 in the models graft runs.
inline constexpr std::uint32_t kMaxRotatedDim = 1024;
// Whether d can be rotated (a power of two from 2 to kMaxRotatedDim).
constexpr bool rotatable(std::uint32_t d) noexcept { return d >= 2 && d <= kMaxRotatedDim && (d & (d - 1)) == 0; }

// x = R x and x = R^-1 x in place, d rotatable. Plain code, the same operations on every CPU, so a
// rotation never makes one SIMD level's result differ from another's.
void rotate_row(float* x, std::uint32_t d) noexcept;
void unrotate_row(float* x, std::uint32_t d) noexcept;

}  // namespace graft::kv
