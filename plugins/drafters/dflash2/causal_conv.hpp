// DFlash2's dynamic causal convolution over the rows of one block (tools/zoo/dflash.py,
// causal_conv), on host-accessible f32 memory. Row j of the block, channel c, side s (0 on a
// half's normed input, 1 on its output):
//   w[tap][c] = base[s][tap][c] + dyn_j[s][tap][c / group]
//   out_j[c]  = sum over tap of w[tap][c] * in_{j - tap}[c]      (rows before the block are zero)
// dyn_j is the row's conv_proj output, [2][kernel][n_embd / group]; base is the file's
// *_conv_base, [2][kernel][n_embd].
#pragma once

#include <cstdint>

namespace graft::dflash2 {

struct ConvShape {
  std::uint32_t n_embd = 0;
  std::uint32_t kernel = 0;
  std::uint32_t group = 0;  // channels sharing one dynamic coefficient
  std::uint32_t groups() const noexcept { return n_embd / group; }
  std::uint32_t dyn_width() const noexcept { return 2 * kernel * groups(); }  // conv_proj outputs per row
};

// in, out: [rows][n_embd] (out must not alias in); dyn: [rows][dyn_width]; base: [2][kernel][n_embd].
void causal_conv(const ConvShape& shape, std::uint32_t side, std::uint32_t rows, const float* in, const float* dyn,
                 const float* base, float* out);

}  // namespace graft::dflash2
