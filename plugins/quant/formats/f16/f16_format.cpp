// F16: IEEE half floats (block of 1, 2 bytes), converted as ggml's GGML_FP32_TO_FP16 does (round to
// nearest even). Kernels round the activations through f16 first, as ggml's vec_dot_f16 path does.
#include <cstdint>

#include "driver/block_format.hpp"
#include "families/dense/dense_gemm.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<std::uint16_t*>(dst);
  for (std::int64_t i = 0; i < k; ++i) y[i] = f32_to_f16_ggml(x[i]);
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const std::uint16_t*>(src);
  for (std::int64_t i = 0; i < k; ++i) y[i] = f16_to_f32(x[i]);
}

const FormatSpec kSpec{
    .traits = {.id = type_id::f16, .name = "f16", .block_elems = 1, .block_bytes = 2},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::f16_round,
    .gemm = {.scalar = dense_gemm_scalar(DenseType::f16),
             .avx2 = dense_gemm_avx2(DenseType::f16),
             .avx512 = dense_gemm_avx512(DenseType::f16)},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("f16",
    "F16 weights (ggml id 1); CPU kernels on f16-rounded activations, f32 accumulation",
    &block_format_factory<kSpec>)
