// Q8_0: blocks of 32 int8 quants with an fp16 scale (34 bytes). The quantizer is ggml's
// quantize_row_q8_0_ref, reproduced operation for operation so files match byte for byte.
#include <cmath>

#include "driver/block_format.hpp"
#include "families/legacy/q8_0_gemm.hpp"
#include "families/legacy/q8_0_packed.hpp"
#include "formats/q8_0/block_q8_0.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_q8_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK8_0; ++i, x += kQK8_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK8_0; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16_ggml(d);
    for (int j = 0; j < kQK8_0; ++j) y[i].qs[j] = static_cast<std::int8_t>(std::round(x[j] * id));  // roundf
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const block_q8_0*>(src);
  for (std::int64_t i = 0; i < k / kQK8_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[i * kQK8_0 + j] = x[i].qs[j] * d;
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q8_0, .name = "q8_0", .block_elems = kQK8_0, .block_bytes = sizeof(block_q8_0)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_0,
    .activation_offset = 128,
    .gemm = {.scalar = &q8_0_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q8_0_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q8_0_gemm_avx512)},
    .avx512_pairs = true,  // AVX-512 batches read the column pairs
    .packed = {&kQ8_0Rows4},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q8_0",
    "Q8_0 weights (ggml id 8): 8-bit quants, fp16 scale per 32; CPU kernels on Q8_0 activations",
    &block_format_factory<kSpec>)
