// Claims an ABI version the host does not speak.
#include "graft/graft.hpp"

namespace {
graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status&) noexcept {
  return nullptr;
}
const graft::PluginDescriptor kDescriptor{999, sizeof(graft::PluginDescriptor), graft::PluginKind::drafter,
                                          "badabi", "0.0.1", "wrong ABI", nullptr, 0, &create};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
