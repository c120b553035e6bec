// Q8_0: blocks of 32 int8 quants with an fp16 scale (34 bytes). The quantizer is ggml's
// quantize_row_q8_0_ref, reproduced operation for operation so files match byte for byte
// (q8_0_rows.hpp).
#include "driver/block_format.hpp"
#include "families/legacy/q8_0_gemm.hpp"
#include "families/legacy/q8_0_packed.hpp"
#include "formats/q8_0/q8_0_rows.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  quantize_row_q8_0(x, static_cast<block_q8_0*>(dst), k);
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  dequantize_row_q8_0(static_cast<const block_q8_0*>(src), y, k);
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
