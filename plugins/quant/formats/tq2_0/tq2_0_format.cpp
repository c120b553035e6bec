// TQ2_0: ternary weights, super-blocks of 256 (66 bytes, block_tq2_0.hpp): 2-bit codes c in 0..2 and
// an fp16 scale, y = (c - 1) * d. The quantizer is ggml's quantize_row_tq2_0_ref, reproduced
// operation for operation so files match byte for byte: d = max |x|, c = lroundf(x / d) + 1 (via
// x * (1/d)).
#include <cmath>

#include "driver/block_format.hpp"
#include "families/ternary/tq2_0_gemm.hpp"
#include "formats/tq2_0/block_tq2_0.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_tq2_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK_K; ++i, ++y) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y->d = f32_to_f16_ggml(d);
    for (int j = 0; j < 64; j += 32) {
      for (int m = 0; m < 32; ++m) {
        std::uint8_t q = 0;
        for (int n = 0; n < 4; ++n) {
          const long c = std::lround(x[m + 32 * n] * id) + 1;  // lroundf: halves away from zero
          q = static_cast<std::uint8_t>(q + ((c & 3) << (2 * n)));
        }
        y->qs[j + m] = q;
      }
      x += 128;
    }
  }
}

// ggml's dequantize_row_tq2_0: (float)(c - 1) * d.
void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* b = static_cast<const block_tq2_0*>(src);
  for (std::int64_t i = 0; i < k / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int e = 0; e < kQK_K; ++e) *y++ = static_cast<float>(tq2_0_code(b[i].qs, e) - 1) * d;
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::tq2_0, .name = "tq2_0", .block_elems = kQK_K, .block_bytes = sizeof(block_tq2_0)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &tq2_0_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&tq2_0_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&tq2_0_gemm_avx512)},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("tq2_0",
    "TQ2_0 weights (ggml id 35): ternary, 2 bits each, fp16 scale per 256; CPU kernels on Q8_K activations",
    &block_format_factory<kSpec>)
