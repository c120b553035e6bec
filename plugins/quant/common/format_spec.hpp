// What one weight-format plugin declares: its type, reference row conversions and CPU kernels.
// The shared WeightFormat implementation (block_format.hpp) does the rest.
#pragma once

#include <cstdint>

#include "gemm.hpp"
#include "graft/weight_format.hpp"
#include "simd_level.hpp"

namespace graft::quant {

enum class ActivationForm {
  f32,        // x as given (f32 weights)
  f16_round,  // x rounded through f16 (f16 weights, as ggml's vec_dot_f16)
  bf16_round, // x rounded through bf16 (bf16 weights, as ggml's vec_dot_bf16)
  q8_0,       // x quantized to Q8_0 blocks (Q8_0, Q4_0, Q1_0, Q2_0 weights, as ggml)
  q8_k,       // x quantized to Q8_K blocks of 256 (K-quants and TQ1_0/TQ2_0, as ggml)
};

struct FormatSpec {
  TypeTraits traits;
  // One row of k elements (k a multiple of traits.block_elems).
  void (*quantize_row)(const float* src, void* dst, std::int64_t k) noexcept;
  void (*dequantize_row)(const void* src, float* dst, std::int64_t k) noexcept;
  ActivationForm activations;
  // For q8_0 activations (ignored for the others): the unsigned offset of the weight codes some kernels multiply by
  // (Q4_0: 8, Q8_0: 128), folded into Q8Activations::lane_offsets.
  std::int32_t activation_offset;
  GemmFn gemm[kSimdLevels];  // indexed by SimdLevel; nullptr where not built (non-x86)
  // Whether the AVX-512 batch kernels read the column-pair copy of the activations
  // (Q8Activations / Q8KActivations pairs); the driver builds it only for formats that do.
  bool avx512_pairs;
};

}  // namespace graft::quant
