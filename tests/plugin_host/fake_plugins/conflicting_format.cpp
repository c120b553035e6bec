// Claims ggml's Q4_0 id with another block geometry: the host must refuse it.
#include "graft/graft.hpp"

namespace {

constexpr graft::TypeTraits kTypes[] = {{graft::type_id::q4_0, "q4_0", 32, 20}};

class Conflicting final : public graft::WeightFormat {
 public:
  std::span<const graft::TypeTraits> types() const noexcept override { return kTypes; }
  graft::Status check_tensor(graft::TypeId, const std::int64_t*, int, std::uint64_t) const override {
    return graft::Status::success();
  }
  graft::Status dequantize(graft::TypeId, const void*, float*, std::int64_t) const override {
    return graft::not_implemented("conflicting dequantize");
  }
  graft::Status quantize(graft::TypeId, const float*, void*, std::int64_t, std::int64_t, const float*) const override {
    return graft::not_implemented("conflicting quantize");
  }
  graft::FormatKernels* kernels(std::string_view) const noexcept override { return nullptr; }
};

graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status& err) noexcept {
  return graft::guarded_create(err, [] { return new Conflicting(); });
}

const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::weight_format, "conflicting", "0.1.0",
                                          "wrong Q4_0 geometry", nullptr, 0, &create};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
