// Q5_K: super-blocks of 256 = 8 sub-blocks of 32 5-bit codes, y = d * sc[j] * q - dmin * m[j] with
// 6-bit sc, m packed as Q4_K's and fp16 d, dmin (176 bytes, 5.5 bits per weight). Dequantization
// is ggml's dequantize_row_q5_K operation for operation; the quantizer is ours (k4_quantizer.hpp);
// both are the K-quant family's, shared with Q4_K (k4_rows.hpp).
#include "driver/block_format.hpp"
#include "families/kquants/k4_packed.hpp"
#include "families/kquants/k4_rows.hpp"
#include "families/kquants/q5_k_gemm.hpp"
#include "formats/q5_k/block_q5_k.hpp"

namespace graft::quant {

namespace {

using Rows = K4Rows<block_q5_k, 5>;

const FormatSpec kSpec{
    .traits = {.id = type_id::q5_k, .name = "q5_k", .block_elems = kQK_K, .block_bytes = sizeof(block_q5_k)},
    .quantize_row = &Rows::quantize,
    .dequantize_row = &Rows::dequantize,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &q5_k_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q5_k_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q5_k_gemm_avx512)},
    .packed = {&kQ5_KRows4},
    .q8k_sums32 = true,  // the AVX2 batch tiles read the activations' sums of 32
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q5_k",
    "Q5_K weights (ggml id 13): 5-bit codes, 6-bit scales and mins per 32, fp16 per 256; CPU kernels on Q8_K "
    "activations",
    &block_format_factory<kSpec>)
