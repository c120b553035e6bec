// Q1_0 (Bonsai 1-bit, ggml id 41): blocks of 128 sign bits with one fp16 scale (18 bytes, 1.125
// bits per weight); element j is bit j % 8 of qs[j / 8], 1 -> +d and 0 -> -d. The quantizer is
// ggml's quantize_row_q1_0_ref, operation for operation: d = (f32 sum of |x| in element order) / 128,
// bit = (x >= 0), so -0.0 is +d and NaN is -d.
#include <cmath>
#include <cstring>

#include "block_format.hpp"
#include "bonsai_blocks.hpp"
#include "half.hpp"
#include "q1_0_gemm.hpp"
#include "packed_groups.hpp"
#include "q1_0_packed.hpp"

namespace graft::quant {

namespace {

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<BlockQ1_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK1_0; ++i, x += kQK1_0) {
    float sum_abs = 0.0f;
    for (int j = 0; j < kQK1_0; ++j) sum_abs += std::fabs(x[j]);
    y[i].d = f32_to_f16_ggml(sum_abs / kQK1_0);
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < kQK1_0; ++j)
      if (x[j] >= 0.0f) y[i].qs[j / 8] = static_cast<std::uint8_t>(y[i].qs[j / 8] | (1u << (j % 8)));
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const BlockQ1_0*>(src);
  for (std::int64_t i = 0; i < k / kQK1_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK1_0; ++j) y[i * kQK1_0 + j] = (x[i].qs[j / 8] >> (j % 8)) & 1 ? d : -d;
  }
}

const PackedLayout kPacked{
    "q1_0_rows16",
    kQ1GroupRows,
    &packed_layout_level,
    &q1_0_packed_bytes,
    &q1_0_pack_groups,
#ifdef __x86_64__
    {nullptr, nullptr, &q1_0_packed_gemm_avx512, &q1_0_packed_gemm_amx},
#else
    {nullptr, nullptr, nullptr, nullptr},
#endif
};

const PackedLayout kPlanes{
    "q1_0_rows32",
    kQ1PlaneRows,
    &q1_0_planes_level,
    &q1_0_planes_bytes,
    &q1_0_pack_planes,
#ifdef __x86_64__
    {nullptr, &q1_0_planes_gemm_avx2, &q1_0_planes_gemm_avx2, &q1_0_planes_gemm_avx2},
#else
    {nullptr, nullptr, nullptr, nullptr},
#endif
    nullptr,  // every row length
    true,     // batches by column: the lookup tables are per column
};

const FormatSpec kSpec{
    {type_id::q1_0, "q1_0", kQK1_0, sizeof(BlockQ1_0)},
    &quantize_row,
    &dequantize_row,
    ActivationForm::q8_0,
    1,  // the kernels multiply by u = code + 1 (0 or 2)
#ifdef __x86_64__
    {&q1_0_gemm_scalar, &q1_0_gemm_avx2, &q1_0_gemm_avx512, &q1_0_gemm_amx},
#else
    {&q1_0_gemm_scalar, nullptr, nullptr},
#endif
    false,  // no kernel reads the column pairs
    {&kPacked, &kPlanes},
};

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q1_0",
    "Q1_0 weights (ggml id 41, Bonsai 1-bit): sign bits, fp16 scale per 128; CPU kernels on Q8_0 activations",
    &block_format_factory<kSpec>)
