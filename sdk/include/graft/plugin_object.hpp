#pragma once

#include <cstdint>
#include <string_view>

#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// Base of every object a plugin's descriptor creates. The host deletes it through this virtual
// destructor while still holding the plugin's library, so the destructor code is always mapped.
class PluginObject {
 public:
  virtual ~PluginObject() = default;

  // An optional capability by name and version: a pointer to the struct that version defines
  // (graft/extension.hpp has the rules and find_extension<T>()), or nullptr when the object does
  // not offer exactly that. New capabilities thus need no new virtual function; by default an
  // object offers none.
  virtual const void* extension(std::string_view /*name*/, std::uint32_t /*version*/) const noexcept {
    return nullptr;
  }
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
