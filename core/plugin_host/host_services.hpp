// The host's implementation of HostServices: logging into spdlog, the loaded weight formats and
// the kernel libraries of the backend in use.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "graft/host.hpp"
#include "graft/kernel_library.hpp"
#include "graft/weight_format.hpp"

namespace graft {

class DefaultHostServices final : public HostServices {
 public:
  unsigned abi_version() const noexcept override { return kAbiVersion; }
  void log(LogLevel level, std::string_view plugin, std::string_view message) const noexcept override;
  const WeightFormat* weight_format(TypeId type) const noexcept override;
  FormatKernels* format_kernels(TypeId type, std::string_view backend) const noexcept override;
  KernelLibrary* kv_store_library(std::string_view store, std::string_view backend) const noexcept override;

  // Registers every type id the format declares; the format must outlive this object's users.
  void add_weight_format(std::shared_ptr<WeightFormat> format);
  // Registers a kernel library for its backend (load_kernel_libraries checks it first).
  void add_kernel_library(std::shared_ptr<KernelLibrary> library);
  const std::vector<std::shared_ptr<KernelLibrary>>& kernel_libraries() const { return libraries_; }

 private:
  std::map<TypeId, std::shared_ptr<WeightFormat>> formats_;
  std::vector<std::shared_ptr<KernelLibrary>> libraries_;
};

}  // namespace graft
