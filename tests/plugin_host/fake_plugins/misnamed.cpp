// Its descriptor names another plugin than its file does.
#include "graft/graft.hpp"

namespace {
graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status&) noexcept {
  return nullptr;
}
const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::drafter, "othername", "0.0.1", "misnamed",
                                          nullptr, 0, &create};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
