// The plugin ABI version. Bump GRAFT_ABI_VERSION (and the namespace with it) whenever a class,
// struct or function signature in sdk/include/graft changes: the host refuses plugins built
// against any other version, and the versioned inline namespace makes a mixed build fail to link
// instead of misbehaving at run time.
#pragma once

#define GRAFT_ABI_VERSION 2
#define GRAFT_ABI_NAMESPACE abi_v2

#define GRAFT_SDK_VERSION_STRING "0.2.0"

namespace graft {
inline constexpr unsigned kAbiVersion = GRAFT_ABI_VERSION;
}
