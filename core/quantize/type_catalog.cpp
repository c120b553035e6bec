#include "quantize/type_catalog.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "plugin_host/plugin_registry.hpp"

namespace graft::quantize {
namespace {

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string joined(const std::vector<std::filesystem::path>& dirs) {
  std::string out;
  for (const auto& d : dirs) out += (out.empty() ? "" : ", ") + d.string();
  return out.empty() ? "(no folders)" : out;
}

}  // namespace

TypeCatalog::TypeCatalog() : formats_{gguf::TypeTable::builtin(), {}}, host_(std::make_unique<DefaultHostServices>()) {
  available_.push_back(type_id::f32);
}

TypeCatalog::~TypeCatalog() {
  // The host's map holds the formats too; drop it before the plugin libraries go.
  host_.reset();
}

Expected<std::unique_ptr<TypeCatalog>> TypeCatalog::load(const std::vector<std::filesystem::path>& plugin_dirs) {
  auto out = std::make_unique<TypeCatalog>();
  PluginRegistry registry(PluginRegistry::default_search_dirs(plugin_dirs));
  out->searched_ = registry.search_dirs();
  auto formats = load_weight_formats(registry, *out->host_);
  if (!formats) return std::move(formats).status();
  out->formats_ = std::move(*formats);
  for (const auto& f : out->formats_.formats)
    for (const TypeTraits& t : f->types())
      if (std::find(out->available_.begin(), out->available_.end(), t.id) == out->available_.end())
        out->available_.push_back(t.id);
  return out;
}

std::unique_ptr<TypeCatalog> TypeCatalog::for_table(gguf::TypeTable table, std::vector<TypeId> available) {
  auto out = std::make_unique<TypeCatalog>();
  out->formats_.types = std::move(table);
  for (const TypeId id : available)
    if (!out->available(id)) out->available_.push_back(id);
  return out;
}

bool TypeCatalog::available(TypeId id) const {
  return std::find(available_.begin(), available_.end(), id) != available_.end();
}

std::string TypeCatalog::name(TypeId id) const {
  const gguf::TypeInfo* info = formats_.types.find(id);
  return info ? info->name : fmt::format("type{}", id);
}

std::uint32_t TypeCatalog::block_elems(TypeId id) const {
  const gguf::TypeInfo* info = formats_.types.find(id);
  return info ? info->block_elems : 0;
}

double TypeCatalog::bits_per_weight(TypeId id) const {
  const gguf::TypeInfo* info = formats_.types.find(id);
  return info && info->block_elems ? 8.0 * info->block_bytes / info->block_elems : 0.0;
}

const WeightFormat* TypeCatalog::format(TypeId id) const {
  return id == type_id::f32 ? nullptr : host_->weight_format(id);
}

std::string TypeCatalog::available_names() const {
  std::string out;
  for (const TypeId id : available_) out += (out.empty() ? "" : ", ") + name(id);
  return out;
}

Expected<TypeId> TypeCatalog::resolve(std::string_view name_in, std::string_view label) const {
  const std::string want = lower(name_in);
  for (const TypeId id : available_)
    if (lower(name(id)) == want) return id;
  // Not writable: is it at least a ggml type (a plugin could provide it)? Builtin ids are < 256.
  bool ggml_type = false;
  for (TypeId id = 0; id < 256 && !ggml_type; ++id) {
    const gguf::TypeInfo* info = gguf::TypeTable::builtin().find(id);
    ggml_type = info && lower(info->name) == want;
  }
  if (!ggml_type)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: unknown type (available: {}; a plugin type needs libgraft_quant_{}.so in: {})", label,
                              available_names(), want, joined(searched_)));
  return Status(Errc::not_found, fmt::format("{}: no weight-format plugin provides this type (expected "
                                             "libgraft_quant_{}.so in: {}; add --plugin-dir DIR)",
                                             label, want, joined(searched_)));
}

}  // namespace graft::quantize
