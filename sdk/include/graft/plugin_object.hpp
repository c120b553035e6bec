#pragma once

#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// Base of every object a plugin's descriptor creates. The host deletes it through this virtual
// destructor while still holding the plugin's library, so the destructor code is always mapped.
class PluginObject {
 public:
  virtual ~PluginObject() = default;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
