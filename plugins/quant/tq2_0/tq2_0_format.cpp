// TQ2_0: ternary weights, super-blocks of 256 (66 bytes): 2-bit codes c in 0..2 and an fp16 scale,
// y = (c - 1) * d. The quantizer is ggml's quantize_row_tq2_0_ref, reproduced operation for
// operation so files match byte for byte: d = max |x|, c = lroundf(x / d) + 1 (via x * (1/d)).
// Element 128h + 32n + m has bits 2n of qs[32h + m], as in Q2_K.
#include <cmath>

#include "block_format.hpp"
#include "half.hpp"
#include "tq2_0_gemm.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<std::uint8_t*>(dst);
  for (std::int64_t i = 0; i < k / 256; ++i, y += 66) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t dh = f32_to_f16_ggml(d);
    y[64] = static_cast<std::uint8_t>(dh & 0xFF);
    y[65] = static_cast<std::uint8_t>(dh >> 8);
    for (int j = 0; j < 64; j += 32) {
      for (int m = 0; m < 32; ++m) {
        std::uint8_t q = 0;
        for (int n = 0; n < 4; ++n) {
          const long c = std::lround(x[m + 32 * n] * id) + 1;  // lroundf: halves away from zero
          q = static_cast<std::uint8_t>(q + ((c & 3) << (2 * n)));
        }
        y[j + m] = q;
      }
      x += 128;
    }
  }
}

// ggml's dequantize_row_tq2_0: (float)(c - 1) * d.
void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* b = static_cast<const std::uint8_t*>(src);
  for (std::int64_t i = 0; i < k / 256; ++i, b += 66) {
    const float d = f16_to_f32(static_cast<std::uint16_t>(b[64] | (b[65] << 8)));
    for (int e = 0; e < 256; ++e) {
      const int c = (b[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
      *y++ = static_cast<float>(c - 1) * d;
    }
  }
}

const FormatSpec kSpec{
    {type_id::tq2_0, "tq2_0", 256, 66},
    &quantize_row,
    &dequantize_row,
    ActivationForm::q8_k,
    0,
#ifdef __x86_64__
    {&tq2_0_gemm_scalar, &tq2_0_gemm_avx2, &tq2_0_gemm_avx512},
#else
    {&tq2_0_gemm_scalar, nullptr, nullptr},
#endif
    false,  // no kernel reads the column pairs
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("tq2_0",
    "TQ2_0 weights (ggml id 35): ternary, 2 bits each, fp16 scale per 256; CPU kernels on Q8_K activations",
    &block_format_factory<kSpec>)
