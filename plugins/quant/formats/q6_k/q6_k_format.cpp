// Q6_K: super-blocks of 256 = 16 sub-blocks of 16 6-bit codes with int8 scales and an fp16 scale,
// y = d * sc * (q - 32) (210 bytes, 6.5625 bits per weight). Dequantization is ggml's
// dequantize_row_q6_K operation for operation; the quantizer is ours (q6_k_quantizer.hpp).
#include "driver/block_format.hpp"
#include "families/kquants/q6_k_gemm.hpp"
#include "formats/q6_k/block_q6_k.hpp"
#include "formats/q6_k/q6_k_quantizer.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_q6_k*>(dst);
  for (std::int64_t i = 0; i < k / kQK_K; ++i) quantize_q6_k_block(x + i * kQK_K, y[i]);
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const block_q6_k*>(src);
  for (std::int64_t i = 0; i < k / kQK_K; ++i, y += kQK_K) {
    const float d = f16_to_f32(x[i].d);
    std::uint8_t q[kQK_K];
    unpack_q6_k_codes(x[i], q);
    // ggml: y = d * sc * q, evaluated left to right (two roundings, no fma).
    for (int e = 0; e < kQK_K; ++e)
      y[e] = d * static_cast<float>(x[i].scales[e / 16]) * static_cast<float>(static_cast<int>(q[e]) - 32);
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q6_k, .name = "q6_k", .block_elems = kQK_K, .block_bytes = sizeof(block_q6_k)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &q6_k_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q6_k_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q6_k_gemm_avx512)},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q6_k",
    "Q6_K weights (ggml id 14): 6-bit codes, int8 scales per 16, fp16 per 256; CPU kernels on Q8_K activations",
    &block_format_factory<kSpec>)
