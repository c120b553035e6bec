// BF16: brain floats (block of 1, 2 bytes), converted as ggml's GGML_FP32_TO_BF16 does (round to
// nearest even, NaN made quiet). Kernels round the activations through bf16 first, as ggml's
// vec_dot_bf16 path does.
#include <cstdint>

#include "driver/block_format.hpp"
#include "families/dense/dense_gemm.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<std::uint16_t*>(dst);
  for (std::int64_t i = 0; i < k; ++i) y[i] = f32_to_bf16(x[i]);
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const std::uint16_t*>(src);
  for (std::int64_t i = 0; i < k; ++i) y[i] = bf16_to_f32(x[i]);
}

const FormatSpec kSpec{
    .traits = {.id = type_id::bf16, .name = "bf16", .block_elems = 1, .block_bytes = 2},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::bf16_round,
    .gemm = {.scalar = dense_gemm_scalar(DenseType::bf16),
             .avx2 = dense_gemm_avx2(DenseType::bf16),
             .avx512 = dense_gemm_avx512(DenseType::bf16)},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("bf16",
    "BF16 weights (ggml id 30); CPU kernels on bf16-rounded activations, f32 accumulation",
    &block_format_factory<kSpec>)
