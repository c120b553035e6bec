// Q1_0 (Bonsai 1-bit, ggml id 41): blocks of 128 sign bits with one fp16 scale (18 bytes, 1.125
// bits per weight); element j is bit j % 8 of qs[j / 8], 1 -> +d and 0 -> -d. The quantizer is
// ggml's quantize_row_q1_0_ref, operation for operation: d = (f32 sum of |x| in element order) / 128,
// bit = (x >= 0), so -0.0 is +d and NaN is -d.
#include <cmath>
#include <cstring>

#include "driver/block_format.hpp"
#include "families/bonsai/q1_0_gemm.hpp"
#include "families/bonsai/q1_0_packed.hpp"
#include "formats/q1_0/block_q1_0.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_q1_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK1_0; ++i, x += kQK1_0) {
    float sum_abs = 0.0f;
    for (int j = 0; j < kQK1_0; ++j) sum_abs += std::fabs(x[j]);
    y[i].d = f32_to_f16_ggml(sum_abs / kQK1_0);
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < kQK1_0; ++j)
      if (x[j] >= 0.0f) y[i].qs[j / 8] = static_cast<std::uint8_t>(y[i].qs[j / 8] | (1u << (j % 8)));
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const block_q1_0*>(src);
  for (std::int64_t i = 0; i < k / kQK1_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK1_0; ++j) y[i * kQK1_0 + j] = (x[i].qs[j / 8] >> (j % 8)) & 1 ? d : -d;
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q1_0, .name = "q1_0", .block_elems = kQK1_0, .block_bytes = sizeof(block_q1_0)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_0,
    .activation_offset = 1,  // the kernels multiply by u = code + 1 (0 or 2)
    .gemm = {.scalar = &q1_0_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q1_0_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q1_0_gemm_avx512),
             .amx = GRAFT_X86_KERNEL(&q1_0_gemm_amx)},
    .packed = {&kQ1_0Rows16, &kQ1_0Rows32},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q1_0",
    "Q1_0 weights (ggml id 41, Bonsai 1-bit): sign bits, fp16 scale per 128; CPU kernels on Q8_0 activations",
    &block_format_factory<kSpec>)
