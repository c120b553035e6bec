// Q8_0: blocks of 32 int8 quants with an fp16 scale (34 bytes). The quantizer is ggml's
// quantize_row_q8_0_ref, reproduced operation for operation so files match byte for byte.
#include <cmath>

#include "block_format.hpp"
#include "blocks.hpp"
#include "half.hpp"
#include "q8_0_gemm.hpp"
#include "q8_0_packed.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<BlockQ8_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK; ++i, x += kQK) {
    float amax = 0.0f;
    for (int j = 0; j < kQK; ++j) {
      const float a = std::fabs(x[j]);
      amax = amax > a ? amax : a;  // ggml's MAX(a, b)
    }
    const float d = amax / ((1 << 7) - 1);
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16_ggml(d);
    for (int j = 0; j < kQK; ++j) y[i].qs[j] = static_cast<std::int8_t>(std::round(x[j] * id));  // roundf
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const BlockQ8_0*>(src);
  for (std::int64_t i = 0; i < k / kQK; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK; ++j) y[i * kQK + j] = x[i].qs[j] * d;
  }
}

const PackedLayout kRows4{
    "q8_0_rows4",
    kQ8GroupRows,
    &q8_0_rows4_level,
    &q8_0_rows4_bytes,
    &q8_0_pack_rows4,
#ifdef __x86_64__
    {nullptr, &q8_0_rows4_gemm_avx2, nullptr, nullptr},
#else
    {nullptr, nullptr, nullptr, nullptr},
#endif
    &q8_0_rows4_row_length,
};

const FormatSpec kSpec{
    {type_id::q8_0, "q8_0", 32, 34},
    &quantize_row,
    &dequantize_row,
    ActivationForm::q8_0,
    128,
#ifdef __x86_64__
    {&q8_0_gemm_scalar, &q8_0_gemm_avx2, &q8_0_gemm_avx512},
#else
    {&q8_0_gemm_scalar, nullptr, nullptr},
#endif
    true,  // AVX-512 batches read the column pairs
    {&kRows4, nullptr},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q8_0",
    "Q8_0 weights (ggml id 8): 8-bit quants, fp16 scale per 32; CPU kernels on Q8_0 activations",
    &block_format_factory<kSpec>)
