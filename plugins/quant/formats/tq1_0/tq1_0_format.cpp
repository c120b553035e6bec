// TQ1_0: ternary weights, super-blocks of 256 (54 bytes, block_tq1_0.hpp): codes c in 0..2 packed in
// base 3 and an fp16 scale, y = (c - 1) * d. The quantizer is ggml's quantize_row_tq1_0_ref,
// reproduced operation for operation so files match byte for byte.
#include <cmath>

#include "driver/block_format.hpp"
#include "families/ternary/tq1_0_gemm.hpp"
#include "formats/tq1_0/block_tq1_0.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

// ggml: lroundf(x * id) + 1, base-3 digits with the first one most significant.
inline std::uint8_t trit(float x, float id) { return static_cast<std::uint8_t>(std::lround(x * id) + 1); }

inline std::uint8_t to_fraction(std::uint8_t v) {
  return static_cast<std::uint8_t>((static_cast<std::uint16_t>(v) * 256 + (243 - 1)) / 243);  // ceiling division
}

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_tq1_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK_K; ++i, ++y) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y->d = f32_to_f16_ggml(d);
    for (int m = 0; m < 32; ++m) {  // 5 trits per byte along 32 bytes
      std::uint8_t q = 0;
      for (int n = 0; n < 5; ++n) q = static_cast<std::uint8_t>(q * 3 + trit(x[m + 32 * n], id));
      y->qs[m] = to_fraction(q);
    }
    x += 160;
    for (int m = 0; m < 16; ++m) {  // along 16 bytes
      std::uint8_t q = 0;
      for (int n = 0; n < 5; ++n) q = static_cast<std::uint8_t>(q * 3 + trit(x[m + 16 * n], id));
      y->qs[32 + m] = to_fraction(q);
    }
    x += 80;
    for (int j = 0; j < 4; ++j) {  // 4 trits per byte, the first the most significant of five
      std::uint8_t q = 0;
      for (int m = 0; m < 4; ++m) q = static_cast<std::uint8_t>(q * 3 + trit(x[j + 4 * m], id));
      y->qh[j] = to_fraction(static_cast<std::uint8_t>(q * 3));
    }
    x += 16;
  }
}

// ggml's dequantize_row_tq1_0: (float)(c - 1) * d.
void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* b = static_cast<const block_tq1_0*>(src);
  for (std::int64_t i = 0; i < k / kQK_K; ++i) {
    const float d = f16_to_f32(b[i].d);
    for (int e = 0; e < kQK_K; ++e) *y++ = static_cast<float>(tq1_0_code(reinterpret_cast<const std::uint8_t*>(b + i), e) - 1) * d;
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::tq1_0, .name = "tq1_0", .block_elems = kQK_K, .block_bytes = sizeof(block_tq1_0)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_k,
    .gemm = {.scalar = &tq1_0_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&tq1_0_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&tq1_0_gemm_avx512)},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("tq1_0",
    "TQ1_0 weights (ggml id 34): ternary, base-3 packed (1.69 bits), fp16 scale per 256; CPU kernels on Q8_K "
    "activations",
    &block_format_factory<kSpec>)
