// Q2_0 (Bonsai 2-bit, ggml id 42): blocks of 64 two-bit codes with one fp16 scale (18 bytes);
// element j is q = (qs[j / 4] >> 2 * (j % 4)) & 3 and y = (q - 1) * d (-d, 0, +d, +2d). The
// quantizer is ggml's quantize_row_q2_0_ref: d = max |x|, q = clamp(roundf(x / d) + 1, 0, 3), with
// the f32 reciprocal 1 / d; so it never writes code 3, but files may hold it and it is decoded.
//
// Old PrismML files stored a different layout under the same id (group 128, 34-byte blocks). A
// tensor's shape alone cannot tell them apart; its byte size can (34 bytes per 128 elements
// instead of 36), so check_tensor names that layout when it sees that size.
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <string>

#include "driver/block_format.hpp"
#include "families/bonsai/q2_0_gemm.hpp"
#include "formats/q2_0/block_q2_0.hpp"
#include "half.hpp"

namespace graft::quant {

namespace {

// The legacy layout that old PrismML files stored under id 42: one fp16 scale per 128 elements and
// 32 bytes of 2-bit codes (34 bytes; the fork's later PQ2_0, id 142).
constexpr int kLegacyQ2Elems = 128;
constexpr int kLegacyQ2Bytes = 34;

// (int)roundf(v) as ggml's x86 build computes it: cvttss2si, which gives INT_MIN for NaN and for
// values out of int range (never reached from finite weights; an infinite one makes id 0 and v NaN).
int round_to_int(float v) {
  const float r = std::roundf(v);
  return r >= -2147483648.0f && r < 2147483648.0f ? static_cast<int>(r) : INT_MIN;
}

void quantize_row(const float* x, void* dst, std::int64_t k) noexcept {
  auto* y = static_cast<block_q2_0*>(dst);
  for (std::int64_t i = 0; i < k / kQK2_0; ++i, x += kQK2_0) {
    float amax = 0.0f;
    for (int j = 0; j < kQK2_0; ++j) {
      const float a = std::fabs(x[j]);
      if (a > amax) amax = a;
    }
    const float d = amax;
    const float id = d > 0.0f ? 1.0f / d : 0.0f;
    y[i].d = f32_to_f16_ggml(d);
    std::memset(y[i].qs, 0, sizeof y[i].qs);
    for (int j = 0; j < kQK2_0; ++j) {
      const int r = round_to_int(x[j] * id);
      const int q = r < 0 ? 0 : r > 2 ? 3 : r + 1;  // clamp(r + 1, 0, 3) without overflowing INT_MIN + 1
      y[i].qs[j / 4] = static_cast<std::uint8_t>(y[i].qs[j / 4] | (q << (2 * (j % 4))));
    }
  }
}

void dequantize_row(const void* src, float* y, std::int64_t k) noexcept {
  const auto* x = static_cast<const block_q2_0*>(src);
  for (std::int64_t i = 0; i < k / kQK2_0; ++i) {
    const float d = f16_to_f32(x[i].d);
    for (int j = 0; j < kQK2_0; ++j) y[i * kQK2_0 + j] = static_cast<float>(((x[i].qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
  }
}

const FormatSpec kSpec{
    .traits = {.id = type_id::q2_0, .name = "q2_0", .block_elems = kQK2_0, .block_bytes = sizeof(block_q2_0)},
    .quantize_row = &quantize_row,
    .dequantize_row = &dequantize_row,
    .activations = ActivationForm::q8_0,
    .activation_offset = 1,  // the kernels multiply by the unsigned code q = code + 1
    .gemm = {.scalar = &q2_0_gemm_scalar,
             .avx2 = GRAFT_X86_KERNEL(&q2_0_gemm_avx2),
             .avx512 = GRAFT_X86_KERNEL(&q2_0_gemm_avx512)},
};

// The shared block format, plus the legacy-layout check.
class Q2Format final : public WeightFormat {
 public:
  explicit Q2Format(std::unique_ptr<WeightFormat> inner) : inner_(std::move(inner)) {}

  std::span<const TypeTraits> types() const noexcept override { return inner_->types(); }

  Status check_tensor(TypeId type, const std::int64_t* ne, int n_dims, std::uint64_t bytes) const override {
    if (type == type_id::q2_0 && ne && n_dims >= 1 && n_dims <= kMaxDims && ne[0] > 0 && ne[0] % kLegacyQ2Elems == 0) {
      std::uint64_t rows = 1;
      bool valid = true;
      for (int d = 1; d < n_dims; ++d) {
        if (ne[d] < 0) valid = false;
        else rows *= static_cast<std::uint64_t>(ne[d]);
      }
      const std::uint64_t legacy = rows * static_cast<std::uint64_t>(ne[0] / kLegacyQ2Elems) * kLegacyQ2Bytes;
      if (valid && rows > 0 && bytes == legacy)
        return Status(Errc::unsupported,
                      "q2_0 tensor: " + std::to_string(bytes) +
                          " bytes is the legacy PrismML Q2_0 layout (34-byte blocks of 128, stored under id 42 "
                          "before ggml's group-64 Q2_0); it is not supported: re-convert the model with current tools");
    }
    return inner_->check_tensor(type, ne, n_dims, bytes);
  }

  Status dequantize(TypeId type, const void* src, float* dst, std::int64_t n) const override {
    return inner_->dequantize(type, src, dst, n);
  }
  Status quantize(TypeId type, const float* src, void* dst, std::int64_t n_rows, std::int64_t row_len,
                  const float* importance) const override {
    return inner_->quantize(type, src, dst, n_rows, row_len, importance);
  }
  FormatKernels* kernels(std::string_view backend_name) const noexcept override { return inner_->kernels(backend_name); }

 private:
  std::unique_ptr<WeightFormat> inner_;
};

PluginObject* create(const HostServices& host, const Config& config, Status& error) noexcept {
  std::unique_ptr<PluginObject> inner(create_block_format(kSpec, host, config, error));
  if (!inner) return nullptr;
  return guarded_create(error, [&]() -> PluginObject* {
    std::unique_ptr<WeightFormat> format(dynamic_cast<WeightFormat*>(inner.get()));
    if (!format) {
      error = Status(Errc::internal, "q2_0: block format is not a WeightFormat");
      return nullptr;
    }
    inner.release();
    return new Q2Format(std::move(format));
  });
}

}  // namespace

}  // namespace graft::quant

GRAFT_QUANT_FORMAT_PLUGIN("q2_0",
    "Q2_0 weights (ggml id 42, Bonsai 2-bit, group 64): codes -1..2, fp16 scale per 64; CPU kernels on Q8_0 "
    "activations",
    &create)
