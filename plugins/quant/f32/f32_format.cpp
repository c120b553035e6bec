// F32: plain floats (block of 1, 4 bytes). Kernels multiply in f32 with the dense lane order.
#include <cstring>

#include "block_format.hpp"
#include "dense_gemm.hpp"

namespace graft::quant {

namespace {

void copy_row(const float* x, void* dst, std::int64_t k) noexcept { std::memcpy(dst, x, static_cast<std::size_t>(k) * 4); }
void copy_back(const void* src, float* y, std::int64_t k) noexcept { std::memcpy(y, src, static_cast<std::size_t>(k) * 4); }

const FormatSpec kSpec{
    {type_id::f32, "f32", 1, 4},
    &copy_row,
    &copy_back,
    ActivationForm::f32,
    0,
    {dense_gemm_scalar(DenseType::f32), dense_gemm_avx2(DenseType::f32), dense_gemm_avx512(DenseType::f32)},
    false,  // no kernel reads the column pairs
};

PluginObject* create(const HostServices& host, const Config& config, Status& error) noexcept {
  return create_block_format(kSpec, host, config, error);
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::weight_format, "f32", GRAFT_SDK_VERSION_STRING,
    "F32 weights (ggml id 0); CPU kernels in f32", kFormatConfigKeys, kFormatConfigKeyCount, &create,
};

}  // namespace

}  // namespace graft::quant

GRAFT_PLUGIN(graft::quant::kDescriptor)
