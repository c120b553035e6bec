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
class FormatKernels;
class KernelLibrary;

class HostServices {
 public:
  virtual ~HostServices() = default;

  virtual unsigned abi_version() const noexcept = 0;
  virtual void log(LogLevel level, std::string_view plugin, std::string_view message) const noexcept = 0;

  // The weight format the host loaded for a type id, or nullptr. Neural drafters use this to run
  // their own layers with whatever formats the target was quantized to.
  virtual const WeightFormat* weight_format(TypeId type) const noexcept = 0;
  // The kernels that multiply by a type on a backend (Backend::name()): the format plugin's own,
  // else a kernel library's for that backend, else nullptr (which the caller reports as an error
  // naming the type and the backend).
  virtual FormatKernels* format_kernels(TypeId type, std::string_view backend) const noexcept = 0;
  // The kernel library that implements the KV store `store` on `backend`, or nullptr.
  virtual KernelLibrary* kv_store_library(std::string_view store, std::string_view backend) const noexcept = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
