// The plugin ABI version. Bump GRAFT_ABI_VERSION (and the namespace with it) whenever anything in
// sdk/include/graft changes, and record the new header hash for it in sdk/abi_hash.txt (a test
// fails until both are done): the host refuses plugins built against any other version, and the
// versioned inline namespace makes a mixed build fail to link instead of misbehaving at run time.
#pragma once

#include "graft/sdk_generated.hpp"  // GRAFT_SDK_VERSION_STRING, GRAFT_SDK_HEADER_HASH

#define GRAFT_ABI_VERSION 10
#define GRAFT_ABI_NAMESPACE abi_v10

namespace graft {
inline constexpr unsigned kAbiVersion = GRAFT_ABI_VERSION;
}
