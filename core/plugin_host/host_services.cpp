#include "plugin_host/host_services.hpp"

#include "common/log.hpp"

namespace graft {

void DefaultHostServices::log(LogLevel level, std::string_view plugin, std::string_view message) const noexcept {
  try {
    spdlog::log(to_spdlog(level), "[{}] {}", plugin, message);
  } catch (...) {
    // A failing log sink must not take a plugin call down with it.
  }
}

const WeightFormat* DefaultHostServices::weight_format(TypeId type) const noexcept {
  auto it = formats_.find(type);
  return it == formats_.end() ? nullptr : it->second.get();
}

FormatKernels* DefaultHostServices::format_kernels(TypeId type, std::string_view backend) const noexcept {
  // The format plugin's own kernels first (the CPU's live there), then a kernel library's.
  if (const WeightFormat* format = weight_format(type))
    if (FormatKernels* k = format->kernels(backend)) return k;
  for (const auto& lib : libraries_)
    if (lib->backend() == backend)
      for (TypeId t : lib->types())
        if (t == type) return lib->kernels(type);
  return nullptr;
}

KernelLibrary* DefaultHostServices::kv_store_library(std::string_view store, std::string_view backend) const noexcept {
  for (const auto& lib : libraries_)
    if (lib->backend() == backend && lib->has_kv_store(store)) return lib.get();
  return nullptr;
}

void DefaultHostServices::add_weight_format(std::shared_ptr<WeightFormat> format) {
  for (const auto& t : format->types()) formats_[t.id] = format;
}

void DefaultHostServices::add_kernel_library(std::shared_ptr<KernelLibrary> library) {
  libraries_.push_back(std::move(library));
}

}  // namespace graft
