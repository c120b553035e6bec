// A weight format with a type id ggml does not have (250): 16 int8 values and an f32 scale per
// block. Shows that a new format loads without rebuilding the host.
#include <cmath>
#include <cstring>

#include "graft/graft.hpp"

namespace {

constexpr graft::TypeId kId = 250;
constexpr graft::TypeTraits kTypes[] = {{kId, "test8", 16, 20}};

class TestFormat final : public graft::WeightFormat {
 public:
  std::span<const graft::TypeTraits> types() const noexcept override { return kTypes; }
  graft::Status check_tensor(graft::TypeId, const std::int64_t*, int, std::uint64_t) const override {
    return graft::Status::success();
  }
  graft::Status dequantize(graft::TypeId, const void* src, float* dst, std::int64_t n) const override {
    const auto* p = static_cast<const std::uint8_t*>(src);
    for (std::int64_t b = 0; b < n / 16; ++b, p += 20) {
      float d;
      std::memcpy(&d, p, 4);
      for (int j = 0; j < 16; ++j) dst[b * 16 + j] = d * static_cast<std::int8_t>(p[4 + j]);
    }
    return graft::Status::success();
  }
  graft::Status quantize(graft::TypeId, const float* src, void* dst, std::int64_t n_rows, std::int64_t row_len,
                         const float*) const override {
    auto* p = static_cast<std::uint8_t*>(dst);
    for (std::int64_t b = 0; b < n_rows * row_len / 16; ++b, p += 20) {
      float amax = 0;
      for (int j = 0; j < 16; ++j) amax = std::fmax(amax, std::fabs(src[b * 16 + j]));
      const float d = amax / 127.0f;
      std::memcpy(p, &d, 4);
      for (int j = 0; j < 16; ++j)
        p[4 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(d ? std::lround(src[b * 16 + j] / d) : 0));
    }
    return graft::Status::success();
  }
  graft::FormatKernels* kernels(std::string_view) const noexcept override { return nullptr; }
};

graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status& err) noexcept {
  return graft::guarded_create(err, [] { return new TestFormat(); });
}

const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::weight_format, "test8", "0.1.0",
                                          "test format with a new type id", nullptr, 0, &create};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
