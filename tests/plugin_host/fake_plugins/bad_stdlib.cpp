// Claims to be built with another C++ standard library than the host's (libc++ here, whose
// std::string has another layout) and against other SDK headers: the host must refuse it, naming
// the standard library, which it checks first.
#include "graft/graft.hpp"

namespace {
graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status&) noexcept {
  return nullptr;
}
const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor), graft::PluginKind::drafter,
                                          "badstdlib", "0.0.1", "other standard library", nullptr, 0, &create,
                                          "libc++ 170000", "0123456789abcdef"};
}  // namespace

GRAFT_PLUGIN(kDescriptor)
