// F32: plain floats (block of 1, 4 bytes). Kernels multiply in f32 with the dense lane order.
#include <cstring>

#include "block_format.hpp"
#include "dense_gemm.hpp"

namespace graft::quant {

namespace {

void copy_row(const float* x, void* dst, std::int64_t k) noexcept { std::memcpy(dst, x, static_cast<std::size_t>(k) * 4); }
void copy_back(const void* src, float* y, std::int64_t k) noexcept { std::memcpy(y, src, static_cast<std::size_t>(k) * 4); }

const FormatSpec kSpec{
    {type_id::f32, "f32", 1, 4},
    &copy_row,
    &copy_back,
    ActivationForm::f32,
    0,
    {dense_gemm_scalar(DenseType::f32), dense_gemm_avx2(DenseType::f32), dense_gemm_avx512(DenseType::f32)},
    false,  // no kernel reads the column pairs
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("f32",
    "F32 weights (ggml id 0); CPU kernels in f32",
    &block_format_factory<kSpec>)
