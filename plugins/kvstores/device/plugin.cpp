// The `device` KV-store plugin: its profile keys, its factory, and the exported descriptor.
#include <string>

#include "device_store.hpp"
#include "graft/graft.hpp"

namespace graft::kv {

namespace {

class DeviceKvStoreFactory final : public KvStoreFactory {
 public:
  DeviceKvStoreFactory(const HostServices& host, const Config& config, CacheType type)
      : host_(host), config_(config), type_(type) {}

  std::uint64_t bytes_per_token(const KvGeometry& g) const noexcept override {
    return kv::bytes_per_token(g, type_, type_);
  }
  // On the CPU the store is this plugin's; a backend whose memory the CPU cannot read (a GPU) gets
  // the "device" store of its kernel library, with this table's keys.
  Expected<std::unique_ptr<KvStore>> create(Backend& backend, const KvGeometry& g) override {
    if (backend.host_accessible(MemoryKind::device)) return DeviceKvStore::create(backend, g, type_, type_);
    if (KernelLibrary* lib = host_.kv_store_library("device", backend.name()))
      return lib->create_kv_store("device", config_, backend, g);
    return Status(Errc::unsupported, "kvstore device: no kernels for backend '" + std::string(backend.name()) +
                                         "' (its kernel library, libgraft_kernels_" + std::string(backend.name()) +
                                         ".so, is missing or has no device store)");
  }

 private:
  const HostServices& host_;
  Config config_;
  CacheType type_;
};

const ConfigKeySpec kKeys[] = {
    {"type", ConfigType::string,
     "element type of the cache: \"f16\" (default; attention differs from f32 by f16 rounding of K/V) or "
     "\"f32\" (exact, twice the memory)"},
};

PluginObject* create(const HostServices& host, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    if (config.has("type") && !config.get_string("type")) {
      error = Status(Errc::invalid_argument, "type must be a string: \"f16\" or \"f32\"");
      return nullptr;
    }
    const std::string type = config.get_string("type").value_or("f16");
    if (type == "f16") return new DeviceKvStoreFactory(host, config, CacheType::f16);
    if (type == "f32") return new DeviceKvStoreFactory(host, config, CacheType::f32);
    error = Status(Errc::invalid_argument, "type = \"" + type + "\" is not supported; valid types: f16, f32");
    return nullptr;
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION,
    sizeof(PluginDescriptor),
    PluginKind::kv_store,
    "device",
    GRAFT_SDK_VERSION_STRING,
    "plain f16/f32 K/V in backend memory with CPU attention (causal and token-tree masks)",
    kKeys,
    std::size(kKeys),
    &create,
};

}  // namespace

}  // namespace graft::kv

GRAFT_PLUGIN(graft::kv::kDescriptor)
