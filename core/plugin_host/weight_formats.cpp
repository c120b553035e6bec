#include "plugin_host/weight_formats.hpp"

#include <fmt/format.h>

#include <map>

namespace graft {

Expected<WeightFormats> load_weight_formats(PluginRegistry& registry, DefaultHostServices& host) {
  WeightFormats out{gguf::TypeTable::builtin(), {}};
  std::map<TypeId, std::string> claimed_by;  // type id -> plugin file that declared it
  for (auto& entry : registry.scan(PluginKind::weight_format)) {
    if (!entry.shadowed_by.empty()) continue;
    if (!entry.library) return entry.error;
    auto format = entry.library->create<WeightFormat>(host, Config{});
    if (!format) return std::move(format).status();
    const std::string file = entry.file.string();
    for (const TypeTraits& t : (*format)->types()) {
      if (t.block_elems == 0 || t.block_bytes == 0 || !t.name)
        return Status(Errc::invalid_argument, fmt::format("{}: type id {} has an empty name or block geometry", file, t.id));
      if (auto prev = claimed_by.find(t.id); prev != claimed_by.end())
        return Status(Errc::invalid_argument,
                      fmt::format("{}: type id {} ('{}') is already provided by {}", file, t.id, t.name, prev->second));
      if (const gguf::TypeInfo* known = out.types.find(t.id);
          known && (known->block_elems != t.block_elems || known->block_bytes != t.block_bytes))
        return Status(Errc::invalid_argument,
                      fmt::format("{}: declares type id {} ('{}') as {} elements in {} bytes per block, but GGUF "
                                  "defines id {} ('{}') as {} in {}",
                                  file, t.id, t.name, t.block_elems, t.block_bytes, t.id, known->name,
                                  known->block_elems, known->block_bytes));
      claimed_by.emplace(t.id, file);
      out.types.add(t.id, gguf::TypeInfo{t.name, t.block_elems, t.block_bytes});
    }
    host.add_weight_format(*format);
    out.formats.push_back(*format);
  }
  return out;
}

Expected<std::vector<std::shared_ptr<KernelLibrary>>> load_kernel_libraries(PluginRegistry& registry,
                                                                            DefaultHostServices& host,
                                                                            std::string_view backend) {
  std::vector<std::shared_ptr<KernelLibrary>> out;
  std::map<TypeId, std::string> claimed_by;
  for (auto& entry : registry.scan(PluginKind::kernels)) {
    if (!entry.shadowed_by.empty()) continue;
    // libgraft_kernels_<backend>.so or libgraft_kernels_<backend>-<name>.so only.
    const std::string stem = entry.file.stem().string().substr(std::string_view("libgraft_kernels_").size());
    if (stem != backend && !(stem.size() > backend.size() && stem.starts_with(backend) && stem[backend.size()] == '-'))
      continue;
    if (!entry.library) return entry.error;
    auto lib = entry.library->create<KernelLibrary>(host, Config{});
    if (!lib) return std::move(lib).status();
    const std::string file = entry.file.string();
    if ((*lib)->backend() != backend)
      return Status(Errc::invalid_argument, fmt::format("{}: a kernel library for backend '{}' by its name computes on "
                                                        "backend '{}'",
                                                        file, backend, (*lib)->backend()));
    for (TypeId t : (*lib)->types()) {
      if (auto prev = claimed_by.find(t); prev != claimed_by.end())
        return Status(Errc::invalid_argument, fmt::format("{}: type id {} on backend '{}' is already provided by {}", file,
                                                          t, backend, prev->second));
      claimed_by.emplace(t, file);
    }
    host.add_kernel_library(*lib);
    out.push_back(*lib);
  }
  return out;
}

}  // namespace graft
