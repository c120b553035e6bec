// Q4_0: blocks of 32 4-bit quants (offset 8) with an fp16 scale (18 bytes). The quantizer is
// ggml's quantize_row_q4_0_ref, reproduced operation for operation so files match byte for byte
// (q4_0_rows.hpp).
#include "driver/block_format.hpp"
#include "families/legacy/q4_0_gemm.hpp"
#include "formats/q4_0/q4_0_rows.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  quantize_row_q4_0(x, static_cast<block_q4_0*>(dst), k);
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  dequantize_row_q4_0(static_cast<const block_q4_0*>(src), y, k);
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
