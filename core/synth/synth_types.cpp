#include "synth/synth_types.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "plugin_host/plugin_registry.hpp"

namespace graft::synth {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string joined(const std::vector<std::filesystem::path>& dirs) {
  std::string out;
  for (const auto& d : dirs) out += (out.empty() ? "" : ", ") + d.string();
  return out.empty() ? "(no folders)" : out;
}

}  // namespace

bool SynthTypes::quantized() const {
  for (const TypeId t : {matrix, embedding}) {
    const gguf::TypeInfo* info = formats.types.find(t);
    if (info && info->block_elems > 1) return true;
  }
  return false;
}

Expected<std::unique_ptr<SynthTypes>> resolve_types(const SynthConfig& cfg,
                                                    const std::vector<std::filesystem::path>& plugin_dirs) {
  auto out = std::make_unique<SynthTypes>();
  out->formats.types = gguf::TypeTable::builtin();
  const std::string matrix = lower(cfg.type), embedding = lower(cfg.embedding_type());
  if (matrix == "f32" && embedding == "f32") return out;

  PluginRegistry registry(PluginRegistry::default_search_dirs(plugin_dirs));
  auto formats = load_weight_formats(registry, out->host);
  if (!formats) return std::move(formats).status();
  out->formats = std::move(*formats);

  auto find = [&](const std::string& name, const char* flag) -> Expected<TypeId> {
    if (name == "f32") return type_id::f32;
    for (const auto& f : out->formats.formats)
      for (const TypeTraits& t : f->types())
        if (name == t.name) return t.id;
    return Status(Errc::not_found, fmt::format("{} {}: no weight-format plugin provides this type (expected "
                                               "libgraft_quant_{}.so in: {}; add --plugin-dir DIR)",
                                               flag, name, name, joined(registry.search_dirs())));
  };
  auto m = find(matrix, "--type");
  if (!m) return std::move(m).status();
  auto e = find(embedding, cfg.embd_type.empty() ? "--type" : "--embd-type");
  if (!e) return std::move(e).status();
  out->matrix = *m;
  out->embedding = *e;
  return out;
}

Status check_geometry(const SynthConfig& cfg, const SynthTypes& types) {
  for (const auto& t : plan_tensors(cfg)) {
    const TypeId id = types.type_of(t.role);
    if (types.formats.types.row_bytes(id, t.ne[0])) continue;
    const gguf::TypeInfo* info = types.formats.types.find(id);
    const char* flag = t.role == TensorRole::embedding && !cfg.embd_type.empty() ? "--embd-type" : "--type";
    return Status(Errc::invalid_argument,
                  fmt::format("{} {} needs rows in multiples of {} elements, but {} has rows of {}", flag,
                              info ? info->name : std::to_string(id), info ? info->block_elems : 0, t.name, t.ne[0]));
  }
  return {};
}

}  // namespace graft::synth
