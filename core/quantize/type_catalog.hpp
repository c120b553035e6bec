// The weight types a command can write and read: f32, which the host converts itself, and every
// type a loaded weight-format plugin provides, with their block geometry and the plugin that
// converts them. Nothing here names a format: a plugin added later is picked up as it is.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "graft/status.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/weight_formats.hpp"

namespace graft::quantize {

class TypeCatalog {
 public:
  // f32 only; no plugin loaded.
  TypeCatalog();
  ~TypeCatalog();
  TypeCatalog(const TypeCatalog&) = delete;
  TypeCatalog& operator=(const TypeCatalog&) = delete;

  // Loads every weight-format plugin found in `plugin_dirs`, then the default search path.
  static Expected<std::unique_ptr<TypeCatalog>> load(const std::vector<std::filesystem::path>& plugin_dirs);
  // A catalog over a given table where only `available` ids can be written (f32 always can); no
  // converters. For policy tests.
  static std::unique_ptr<TypeCatalog> for_table(gguf::TypeTable table, std::vector<TypeId> available);

  // A type name (case-insensitive) -> id. Errors start with `label` (e.g. "--type q9_9"):
  // "unknown type" (Errc::invalid_argument, listing the available names) when neither ggml nor a
  // loaded plugin knows the name; "no weight-format plugin provides this type" (Errc::not_found,
  // naming the plugin file and the folders searched) for a ggml type without its plugin.
  Expected<TypeId> resolve(std::string_view name, std::string_view label) const;

  bool available(TypeId id) const;  // f32 or a plugin's type
  const std::vector<TypeId>& types() const { return available_; }  // f32 first, then plugin order
  const gguf::TypeTable& table() const { return formats_.types; }
  std::string name(TypeId id) const;
  std::uint32_t block_elems(TypeId id) const;
  double bits_per_weight(TypeId id) const;
  // The plugin converting `id`; nullptr for f32 (the host copies floats) and for unknown ids.
  const WeightFormat* format(TypeId id) const;
  // "f32, bf16, f16, q4_0, q8_0": the names `resolve` accepts.
  std::string available_names() const;
  const std::vector<std::filesystem::path>& searched() const { return searched_; }

 private:
  WeightFormats formats_;
  std::unique_ptr<DefaultHostServices> host_;
  std::vector<TypeId> available_;
  std::vector<std::filesystem::path> searched_;
};

}  // namespace graft::quantize
