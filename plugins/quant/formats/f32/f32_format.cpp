// F32: plain floats (block of 1, 4 bytes). Kernels multiply in f32 with the dense lane order.
#include <cstring>

#include "driver/block_format.hpp"
#include "families/dense/dense_gemm.hpp"

namespace graft::quant {

namespace {

void copy_row(const float* x, void* dst, std::int64_t k) noexcept { std::memcpy(dst, x, static_cast<std::size_t>(k) * 4); }
void copy_back(const void* src, float* y, std::int64_t k) noexcept { std::memcpy(y, src, static_cast<std::size_t>(k) * 4); }

const FormatSpec kSpec{
    .traits = {.id = type_id::f32, .name = "f32", .block_elems = 1, .block_bytes = 4},
    .quantize_row = &copy_row,
    .dequantize_row = &copy_back,
    .activations = ActivationForm::f32,
    .gemm = {.scalar = dense_gemm_scalar(DenseType::f32),
             .avx2 = dense_gemm_avx2(DenseType::f32),
             .avx512 = dense_gemm_avx512(DenseType::f32)},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("f32",
    "F32 weights (ggml id 0); CPU kernels in f32",
    &block_format_factory<kSpec>)
