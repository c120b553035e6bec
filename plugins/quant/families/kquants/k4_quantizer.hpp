// The quantizer of the formats with ggml's "scale and min per 32, 6 bits each" super-blocks (Q4_K
// with 4-bit codes, Q5_K with 5-bit codes). Not byte-identical to ggml's quantize_row_q4_K_ref
// (files need not be; dequantization is): it starts as ggml does and then refines each sub-block's
// 6-bit scale and min against the plain squared error of the stored (fp16, 6-bit) values.
//   1. Per sub-block of 32: an affine fit x ~ s * q - m (s, m >= 0) by weighted least squares over
//      a sweep of candidate step sizes (weights rms + |x|, ggml's make_qkx2_quants idea).
//   2. d = fp16(max s / 63), dmin = fp16(max m / 63); each s, m rounded to its 6-bit multiple.
//   3. Per sub-block, every 6-bit (scale, min) pair within +-kRefineRadius (2) of that rounding is
//      tried with nearest codes; the pair with the least squared error of the dequantized values
//      (computed exactly as dequantize does) wins.
// Trying d and dmin at 0.97 / 1 / 1.03 as well cut the error by another ~0.5% for 9x the time;
// radius 1 trades a little error for speed (docs/formats_kquants.md).
#pragma once

#include <cstdint>

namespace graft::quant {

struct K4Block {
  std::uint16_t d = 0, dmin = 0;  // fp16
  std::uint8_t sc[8] = {}, m[8] = {};
  std::uint8_t q[256] = {};       // codes 0..nmax in element order
};

// One super-block of 256 values; nmax = 15 (Q4_K) or 31 (Q5_K).
void quantize_k4_block(const float* x, int nmax, K4Block& out) noexcept;

}  // namespace graft::quant
