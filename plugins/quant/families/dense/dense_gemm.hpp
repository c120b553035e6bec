// Kernels for dense weights (f32, f16, bf16) against f32 activations (already rounded through the
// weight's type, see dense_activations.hpp). Each output is defined as 16 lane sums, lane l taking
// elements l, l + 16, l + 32, ... in order (acc = fma(w, x, acc); the row is padded with zeros to
// a multiple of 16), then (a[l] + a[l+8]) for l < 8, then + the element 4 apart, then 2 apart, then
// 1 apart. Every SIMD level computes exactly that sequence (the scalar one with std::fma).
#pragma once

#include <cstdint>

#include "driver/gemm.hpp"
#include "half.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

enum class DenseType { f32, f16, bf16 };

GemmFn dense_gemm_scalar(DenseType type) noexcept;
GemmFn dense_gemm_avx2(DenseType type) noexcept;
GemmFn dense_gemm_avx512(DenseType type) noexcept;

template <DenseType T>
inline constexpr std::int64_t kElemBytes = T == DenseType::f32 ? 4 : 2;

// Element i of a weight row, widened to f32 (exact).
template <DenseType T>
inline float dense_weight(const std::uint8_t* row, std::int64_t i) noexcept {
  if constexpr (T == DenseType::f32) return reinterpret_cast<const float*>(row)[i];
  else if constexpr (T == DenseType::f16) return f16_to_f32(reinterpret_cast<const std::uint16_t*>(row)[i]);
  else return bf16_to_f32(reinterpret_cast<const std::uint16_t*>(row)[i]);
}

// The fixed reduction of the 16 lane sums.
inline float reduce_lanes16(const float* a) noexcept {
  float h[8], q[4];
  for (int l = 0; l < 8; ++l) h[l] = a[l] + a[l + 8];
  for (int l = 0; l < 4; ++l) q[l] = h[l] + h[l + 4];
  const float t0 = q[0] + q[2], t1 = q[1] + q[3];
  return t0 + t1;
}

}  // namespace graft::quant
