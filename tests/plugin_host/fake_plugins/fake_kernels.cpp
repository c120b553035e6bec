// A kernel library for a backend that does not exist ("fakegpu"): kernels for test8 (type 250)
// that multiply nothing, to test how the host loads kernel libraries. Built three times: the library
// itself, a second one claiming the same type, and one whose backend is not the one its name says.
#include "graft/graft.hpp"

#ifndef FAKE_NAME
#error FAKE_NAME, FAKE_BACKEND and FAKE_TYPE are set by tests/plugin_host/CMakeLists.txt
#endif

namespace {

class NoKernels final : public graft::FormatKernels {
 public:
  graft::Status matmul(graft::Backend&, const graft::TensorView&, const graft::PreparedWeights*, const graft::TensorView&,
                       const graft::TensorView&) override {
    return graft::Status(graft::Errc::not_implemented, "fake kernels");
  }
  graft::Status prepare(graft::Backend&, const graft::TensorView&, std::unique_ptr<graft::PreparedWeights>&) override {
    return graft::Status::success();
  }
  std::uint64_t prepared_bytes(graft::Backend&, const graft::TensorView&) override { return 0; }
  graft::Status get_rows(graft::Backend&, const graft::TensorView&, const graft::PreparedWeights*, const graft::TensorView&,
                         const graft::TensorView&) override {
    return graft::Status(graft::Errc::not_implemented, "fake kernels");
  }
};

constexpr graft::TypeId kTypes[] = {FAKE_TYPE};

class FakeLibrary final : public graft::KernelLibrary {
 public:
  std::string_view backend() const noexcept override { return FAKE_BACKEND; }
  std::span<const graft::TypeId> types() const noexcept override { return kTypes; }
  graft::FormatKernels* kernels(graft::TypeId type) noexcept override { return type == FAKE_TYPE ? &kernels_ : nullptr; }
  bool has_kv_store(std::string_view store) const noexcept override { return store == "device"; }
  graft::Expected<std::unique_ptr<graft::KvStore>> create_kv_store(std::string_view, const graft::Config&, graft::Backend&,
                                                                   const graft::KvGeometry&) override {
    return graft::Status(graft::Errc::not_implemented, "fake kernels: no store");
  }

 private:
  NoKernels kernels_;
};

graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status& error) noexcept {
  return graft::guarded_create(error, [] { return new FakeLibrary(); });
}

const graft::PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor), graft::PluginKind::kernels, FAKE_NAME, "1.0",
    "a kernel library for tests", nullptr, 0, &create,
};

}  // namespace

GRAFT_PLUGIN(kDescriptor)
