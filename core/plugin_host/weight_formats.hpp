// Weight formats come from plugins: loading them registers their kernels with the host services
// and teaches the GGUF reader their type ids, so a file using a new format loads without a host
// rebuild.
#pragma once

#include <memory>
#include <vector>

#include "graft/weight_format.hpp"
#include "gguf/gguf_types.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_registry.hpp"

namespace graft {

struct WeightFormats {
  gguf::TypeTable types;                                // builtin ggml ids + plugin ids
  std::vector<std::shared_ptr<WeightFormat>> formats;   // keep their libraries loaded
};

// Loads every quant plugin on the registry's path, registers each with `host`, and extends the
// builtin type table. A plugin that fails to load, or that declares a type id with a geometry
// other than GGUF's (or another plugin's) for that id, is an error naming the file.
Expected<WeightFormats> load_weight_formats(PluginRegistry& registry, DefaultHostServices& host);

// Loads the kernel libraries of one backend on the registry's path (libgraft_kernels_<backend>.so
// and libgraft_kernels_<backend>-<name>.so: a CPU run opens no GPU library) and registers each with
// `host`. A library that fails to load, that computes on another backend than its file name says,
// or that claims a type another library of the backend claims is an error naming the file.
Expected<std::vector<std::shared_ptr<KernelLibrary>>> load_kernel_libraries(PluginRegistry& registry,
                                                                            DefaultHostServices& host,
                                                                            std::string_view backend);

}  // namespace graft
