// Q4_K: super-blocks of 256 = 8 sub-blocks of 32 4-bit codes, y = d * sc[j] * q - dmin * m[j] with
// 6-bit sc, m and fp16 d, dmin (144 bytes, 4.5 bits per weight). Dequantization is ggml's
// dequantize_row_q4_K operation for operation; the quantizer is ours (k4_quantizer.hpp).
#include "driver/block_format.hpp"
#include "driver/packed_groups.hpp"
#include "families/kquants/k4_packed.hpp"
#include "families/kquants/k4_quantizer.hpp"
#include "families/kquants/k4_scales.hpp"
#include "families/kquants/q4_k_gemm.hpp"
#include "formats/q4_k/block_q4_k.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_q4_k*>(dst);
  for (std::int64_t i = 0; i < k / kQK_K; ++i, x += kQK_K) {
    K4Block b;
    quantize_k4_block(x, 15, b);
    y[i].d = b.d;
    y[i].dmin = b.dmin;
    pack_scales_k4(b.sc, b.m, y[i].scales);
    for (int j = 0; j < 4; ++j)
      for (int l = 0; l < 32; ++l)
        y[i].qs[32 * j + l] = static_cast<std::uint8_t>(b.q[64 * j + l] | (b.q[64 * j + 32 + l] << 4));
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const block_q4_k*>(src);
  for (std::int64_t i = 0; i < k / kQK_K; ++i) {
    const float d = f16_to_f32(x[i].d), dmin = f16_to_f32(x[i].dmin);
    std::uint8_t sc[8], m[8];
    unpack_scales_k4(x[i].scales, sc, m);
    for (int j = 0; j < 4; ++j) {
      // ggml: d1 = d * sc, m1 = min * m, y = d1 * q - m1 (two roundings, no fma)
      const float d1 = d * sc[2 * j], m1 = dmin * m[2 * j];
      const float d2 = d * sc[2 * j + 1], m2 = dmin * m[2 * j + 1];
      const std::uint8_t* q = x[i].qs + 32 * j;
      for (int l = 0; l < 32; ++l) *y++ = d1 * static_cast<float>(q[l] & 0x0F) - m1;
      for (int l = 0; l < 32; ++l) *y++ = d2 * static_cast<float>(q[l] >> 4) - m2;
    }
  }
}

const PackedLayout kPacked{
    .name = "q4_k_rows4",
    .row_group = kQ4GroupRows,
    .used_at = &packed_layout_level,
    .bytes = &q4_k_packed_bytes,
    .pack = &q4_k_pack_groups,
    .gemm = {.avx512 = GRAFT_X86_KERNEL(&q4_k_packed_gemm_avx512), .amx = GRAFT_X86_KERNEL(&q4_k_packed_gemm_avx512)},
};

const FormatSpec kSpec{
    .traits = {.id = type_id::q4_k, .name = "q4_k", .block_elems = kQK_K, .block_bytes = sizeof(block_q4_k)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &q4_k_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q4_k_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q4_k_gemm_avx512)},
    .packed = {&kPacked},
    .q8k_sums32 = true,  // the AVX2 batch tiles read the activations' sums of 32
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q4_k",
    "Q4_K weights (ggml id 12): 4-bit codes, 6-bit scales and mins per 32, fp16 per 256; CPU kernels on Q8_K "
    "activations",
    &block_format_factory<kSpec>)
