// Q4_0: blocks of 32 4-bit quants (offset 8) with an fp16 scale (18 bytes). The quantizer is
// ggml's quantize_row_q4_0_ref, reproduced operation for operation so files match byte for byte:
// the scale is the signed value of largest magnitude (the first one on ties) divided by -8.
#include <algorithm>
#include <cmath>

#include "driver/block_format.hpp"
#include "families/legacy/q4_0_gemm.hpp"
#include "formats/q4_0/block_q4_0.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_q4_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK4_0; ++i, x += kQK4_0) {
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < kQK4_0; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16_ggml(d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      const float x0 = x[j] * id, x1 = x[kQK4_0 / 2 + j] * id;
      // ggml: MIN(15, (int8_t)(x + 8.5f)); the float-to-int conversion truncates.
      const auto q0 = static_cast<std::uint8_t>(std::min(15, static_cast<int>(static_cast<std::int8_t>(x0 + 8.5f))));
      const auto q1 = static_cast<std::uint8_t>(std::min(15, static_cast<int>(static_cast<std::int8_t>(x1 + 8.5f))));
      y[i].qs[j] = static_cast<std::uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const block_q4_0*>(src);
  for (std::int64_t i = 0; i < k / kQK4_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK4_0 / 2; ++j) {
      y[i * kQK4_0 + j] = ((x[i].qs[j] & 0x0F) - 8) * d;
      y[i * kQK4_0 + j + kQK4_0 / 2] = ((x[i].qs[j] >> 4) - 8) * d;
    }
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q4_0, .name = "q4_0", .block_elems = kQK4_0, .block_bytes = sizeof(block_q4_0)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_0,
    .activation_offset = 8,
    .gemm = {.scalar = &q4_0_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q4_0_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q4_0_gemm_avx512)},
    .avx512_pairs = true,  // AVX-512 batches read the column pairs
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q4_0",
    "Q4_0 weights (ggml id 2): 4-bit quants, fp16 scale per 32; CPU kernels on Q8_0 activations",
    &block_format_factory<kSpec>)
