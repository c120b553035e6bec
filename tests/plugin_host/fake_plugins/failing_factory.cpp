// Its factory throws; the exception must come back as a Status, not cross the boundary.
#include <stdexcept>

#include "graft/graft.hpp"

namespace {
graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status& err) noexcept {
  return graft::guarded_create(err, []() -> graft::PluginObject* {
    throw std::runtime_error("cannot reserve 1 TiB of KV cache");
  });
}
const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::kv_store, "failing", "0.0.1", "throws",
                                          nullptr, 0, &create};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
