// TQ1_0: ternary weights, super-blocks of 256 (54 bytes): codes c in 0..2 packed in base 3, five per
// byte in qs[48] and four per byte in qh[4], and an fp16 scale; y = (c - 1) * d. A byte holds its
// trits as a fixed-point fraction, ceil(v * 256 / 243) for v = c0 c1 c2 c3 c4 in base 3; trit n is
// ((uint8)(byte * 3^n) * 3) >> 8. The quantizer is ggml's quantize_row_tq1_0_ref, reproduced
// operation for operation so files match byte for byte. Elements: 0..159 are trit e / 32 of
// qs[e % 32]; 160..239 trit (e - 160) / 16 of qs[32 + (e - 160) % 16]; 240..255 trit (e - 240) / 4 of
// qh[(e - 240) % 4].
#include <cmath>

#include "block_format.hpp"
#include "half.hpp"
#include "tq1_0_gemm.hpp"

namespace graft::quant {

namespace {

// ggml: lroundf(x * id) + 1, base-3 digits with the first one most significant.
inline std::uint8_t trit(float x, float id) { return static_cast<std::uint8_t>(std::lround(x * id) + 1); }

inline std::uint8_t to_fraction(std::uint8_t v) {
  return static_cast<std::uint8_t>((static_cast<std::uint16_t>(v) * 256 + (243 - 1)) / 243);  // ceiling division
}

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<std::uint8_t*>(dst);
  for (std::int64_t i = 0; i < k / 256; ++i, y += 54) {
    float amax = 0.0f;
    for (int j = 0; j < 256; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const std::uint16_t dh = f32_to_f16_ggml(d);
    y[52] = static_cast<std::uint8_t>(dh & 0xFF);
    y[53] = static_cast<std::uint8_t>(dh >> 8);
    for (int m = 0; m < 32; ++m) {  // 5 trits per byte along 32 bytes
      std::uint8_t q = 0;
      for (int n = 0; n < 5; ++n) q = static_cast<std::uint8_t>(q * 3 + trit(x[m + 32 * n], id));
      y[m] = to_fraction(q);
    }
    x += 160;
    for (int m = 0; m < 16; ++m) {  // along 16 bytes
      std::uint8_t q = 0;
      for (int n = 0; n < 5; ++n) q = static_cast<std::uint8_t>(q * 3 + trit(x[m + 16 * n], id));
      y[32 + m] = to_fraction(q);
    }
    x += 80;
    for (int j = 0; j < 4; ++j) {  // 4 trits per byte, the first the most significant of five
      std::uint8_t q = 0;
      for (int m = 0; m < 4; ++m) q = static_cast<std::uint8_t>(q * 3 + trit(x[j + 4 * m], id));
      y[48 + j] = to_fraction(static_cast<std::uint8_t>(q * 3));
    }
    x += 16;
  }
}

// ggml's dequantize_row_tq1_0: (float)(c - 1) * d.
void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* b = static_cast<const std::uint8_t*>(src);
  for (std::int64_t i = 0; i < k / 256; ++i, b += 54) {
    const float d = f16_to_f32(static_cast<std::uint16_t>(b[52] | (b[53] << 8)));
    for (int e = 0; e < 256; ++e) *y++ = static_cast<float>(tq1_0_code(b, e) - 1) * d;
  }
}

const FormatSpec kSpec{
    {type_id::tq1_0, "tq1_0", 256, 54},
    &quantize_row,
    &dequantize_row,
    ActivationForm::q8_k,
    0,
#ifdef __x86_64__
    {&tq1_0_gemm_scalar, &tq1_0_gemm_avx2, &tq1_0_gemm_avx512},
#else
    {&tq1_0_gemm_scalar, nullptr, nullptr},
#endif
    false,  // no kernel reads the column pairs
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("tq1_0",
    "TQ1_0 weights (ggml id 34): ternary, base-3 packed (1.69 bits), fp16 scale per 256; CPU kernels on Q8_K "
    "activations",
    &block_format_factory<kSpec>)
