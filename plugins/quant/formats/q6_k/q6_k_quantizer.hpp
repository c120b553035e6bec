// The Q6_K quantizer. Not byte-identical to ggml's quantize_row_q6_K_ref (files need not be;
// dequantization is): it starts as ggml does and then refines each sub-block's int8 scale against
// the plain squared error of the stored values.
//   1. Per sub-block of 16: a signed scale s with codes in -32..31, chosen over a sweep of step
//      sizes by x^2-weighted least squares (ggml's make_qx_quants idea); the value of largest
//      magnitude maps to -32.
//   2. d = fp16(-(s of largest |s|) / 128); each s rounded to its int8 multiple of d.
//   3. Per sub-block, every int8 scale within +-kRefineRadius (3) of that rounding is tried with
//      nearest codes; the one with the least squared error of the dequantized values (computed
//      exactly as dequantize does) wins.
// Also trying d x 0.96 / 0.98 / 1.02 cut the error by only ~0.4% for 4x the time.
#pragma once

#include <cstdint>

#include "formats/q6_k/block_q6_k.hpp"

namespace graft::quant {

// One super-block of 256 values.
void quantize_q6_k_block(const float* x, block_q6_k& out) noexcept;

}  // namespace graft::quant
