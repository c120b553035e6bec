// Q4_K: super-blocks of 256 = 8 sub-blocks of 32 4-bit codes, y = d * sc[j] * q - dmin * m[j] with
// 6-bit sc, m and fp16 d, dmin (144 bytes, 4.5 bits per weight). Dequantization is ggml's
// dequantize_row_q4_K operation for operation; the quantizer is ours (k4_quantizer.hpp); both are
// the K-quant family's, shared with Q5_K (k4_rows.hpp).
#include "driver/block_format.hpp"
#include "families/kquants/k4_packed.hpp"
#include "families/kquants/k4_rows.hpp"
#include "families/kquants/q4_k_gemm.hpp"
#include "formats/q4_k/block_q4_k.hpp"

namespace graft::quant {

namespace {

using Rows = K4Rows<block_q4_k, 4>;

const FormatSpec kSpec{
    .traits = {.id = type_id::q4_k, .name = "q4_k", .block_elems = kQK_K, .block_bytes = sizeof(block_q4_k)},
    .quantize_row = &Rows::quantize,
    .dequantize_row = &Rows::dequantize,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &q4_k_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q4_k_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q4_k_gemm_avx512)},
    .packed = {&kQ4_KRows4},
    .q8k_sums32 = true,  // the AVX2 batch tiles read the activations' sums of 32
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q4_k",
    "Q4_K weights (ggml id 12): 4-bit codes, 6-bit scales and mins per 32, fp16 per 256; CPU kernels on Q8_K "
    "activations",
    &block_format_factory<kSpec>)
