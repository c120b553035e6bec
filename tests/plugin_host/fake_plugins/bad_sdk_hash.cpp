// Same ABI version and descriptor size, but built against other SDK headers (an interface edited
// without an ABI bump): the host must refuse it.
#include "graft/graft.hpp"

namespace {
graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status&) noexcept {
  return nullptr;
}
const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor), graft::PluginKind::drafter,
                                          "badhash", "0.0.1", "other SDK headers", nullptr, 0, &create,
                                          GRAFT_STDLIB_TAG, "0123456789abcdef"};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
