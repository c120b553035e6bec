// Activations for dense (f32/f16/bf16) weights. ggml's CPU backend converts x to the weight's type
// before the dot product (vec_dot_type of F16 is F16, of BF16 is BF16) and then multiplies in f32,
// so we round each x through f16 or bf16 once per matmul and keep the rounded values as f32.
// Products of two f16 (or two bf16) values are exact in f32, as in ggml.
#pragma once

#include <cstdint>
#include <vector>

#include "graft/backend.hpp"
#include "simd/simd_level.hpp"

namespace graft::quant {

enum class DenseRounding { none, f16, bf16 };

// Returns x itself for DenseRounding::none, else the rounded copy stored in `storage`. The f16
// round trip runs on F16C from the avx2 level up (the same values as f32_to_f16_ggml, a NaN
// included: it comes back as sign | 0x7FC00000 at every level).
const float* prepare_dense_activations(Backend& backend, SimdLevel level, DenseRounding rounding, const float* x,
                                       std::int64_t count, std::vector<float>& storage);

}  // namespace graft::quant
