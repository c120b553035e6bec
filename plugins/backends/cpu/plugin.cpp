// The `cpu` backend plugin: its profile keys and the exported descriptor.
#include "cpu_backend.hpp"
#include "graft/graft.hpp"

namespace graft::cpu {

namespace {

const ConfigKeySpec kKeys[] = {
    {"threads", ConfigType::integer, "worker threads; 0 = one per logical core", 0, 4096, false},
};

PluginObject* create(const HostServices&, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    auto backend = make_cpu_backend(static_cast<unsigned>(config.get_int("threads").value_or(0)));
    if (!backend) {
      error = backend.status();
      return nullptr;
    }
    return backend->release();
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::backend, "cpu", GRAFT_SDK_VERSION_STRING,
    "CPU backend: host memory, thread pool, generic ops", kKeys, std::size(kKeys), &create,
};

}  // namespace

}  // namespace graft::cpu

GRAFT_PLUGIN(graft::cpu::kDescriptor)
