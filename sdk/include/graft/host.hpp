// Services the host gives every plugin. Logging goes through the host's sink so all plugins share
// one logger (each .so linking spdlog would get its own registry).
#pragma once

#include <string>
#include <string_view>

#include "graft/status.hpp"
#include "graft/tensor.hpp"
#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

enum class LogLevel : std::uint32_t { trace, debug, info, warn, error };

class WeightFormat;

class HostServices {
 public:
  virtual ~HostServices() = default;

  virtual unsigned abi_version() const noexcept = 0;
  virtual void log(LogLevel level, std::string_view plugin, std::string_view message) const noexcept = 0;

  // The weight format the host loaded for a type id, or nullptr. Neural drafters use this to run
  // their own layers with whatever formats the target was quantized to.
  virtual const WeightFormat* weight_format(TypeId type) const noexcept = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
