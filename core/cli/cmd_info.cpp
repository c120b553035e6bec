// `graft info MODEL [--tensors] [--json]`: what a GGUF file holds, read through the same
// validating loader the engine uses, so a file that info accepts is one the engine can map.
#include <boost/program_options.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "common/human_bytes.hpp"
#include "gguf/gguf_file.hpp"
#include "model/architecture.hpp"
#include "model/model_params.hpp"
#include "plugin_host/weight_formats.hpp"

namespace graft::cli {
namespace {

namespace po = boost::program_options;
using gguf::File;
using gguf::TensorInfo;
using gguf::Value;
using gguf::ValueType;

struct TypeSummary {
  std::uint64_t tensors = 0, elements = 0, bytes = 0;
};

// Keys and names are untrusted bytes: keep each entry on one terminal line.
std::string one_line(std::string s) {
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = '?';
  }
  return s;
}

std::string type_label(const Value& v) {
  if (v.type != ValueType::array) return gguf::value_type_name(v.type);
  return std::string("array[") + gguf::value_type_name(v.elem_type) + "]";
}

std::string shape(const TensorInfo& t) {
  std::string s = "[";
  for (std::uint32_t j = 0; j < t.n_dims; ++j) s += (j ? ", " : "") + std::to_string(t.ne[j]);
  return s + "]";
}

nlohmann::json json_value(const Value& v, std::size_t max_items) {
  switch (v.type) {
    case ValueType::string: return v.str;
    case ValueType::boolean: return v.b;
    case ValueType::f32:
    case ValueType::f64: return std::isfinite(v.f) ? nlohmann::json(v.f) : nlohmann::json(nullptr);
    case ValueType::array: {
      nlohmann::json head = nlohmann::json::array();
      for (std::size_t k = 0; k < v.items.size() && k < max_items; ++k) head.push_back(json_value(v.items[k], max_items));
      return {{"elem_type", gguf::value_type_name(v.elem_type)}, {"count", v.items.size()}, {"head", head}};
    }
    default: return gguf::is_signed_integer(v.type) ? nlohmann::json(v.i) : nlohmann::json(v.u);
  }
}

void print_json(const File& f, const gguf::TypeTable& table, const std::map<TypeId, TypeSummary>& types,
                std::uint64_t params, std::uint64_t bytes, bool tensors) {
  nlohmann::json o = {{"file", f.name()},
                      {"size", f.file_size()},
                      {"version", f.version()},
                      {"alignment", f.alignment()},
                      {"data_offset", f.data_offset()},
                      {"tensor_count", f.tensors().size()}};
  auto& meta = o["metadata"] = nlohmann::json::array();
  for (const auto& kv : f.metadata())
    meta.push_back({{"key", kv.key}, {"type", gguf::value_type_name(kv.value.type)}, {"value", json_value(kv.value, 8)}});
  auto& type_list = o["types"] = nlohmann::json::array();
  for (const auto& [id, s] : types)
    type_list.push_back({{"type", table.find(id)->name}, {"tensors", s.tensors}, {"elements", s.elements}, {"bytes", s.bytes}});
  o["parameters"] = params;
  o["tensor_bytes"] = bytes;
  if (tensors) {
    auto& list = o["tensors"] = nlohmann::json::array();
    for (const auto& t : f.tensors())
      list.push_back({{"name", t.name},
                      {"type", table.find(t.type)->name},
                      {"shape", std::vector<std::uint64_t>(t.ne.begin(), t.ne.begin() + t.n_dims)},
                      {"bytes", t.bytes},
                      {"offset", f.data_offset() + t.offset}});
  }
  // Keys and names are untrusted bytes: invalid UTF-8 becomes U+FFFD so the output stays JSON.
  std::puts(o.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
}

void print_text(const File& f, const gguf::TypeTable& table, const std::map<TypeId, TypeSummary>& types,
                std::uint64_t params, std::uint64_t bytes, bool tensors) {
  std::printf("file:        %s\n", f.name().c_str());
  std::printf("size:        %" PRIu64 " bytes (%s)\n", f.file_size(), human_bytes(f.file_size()).c_str());
  std::printf("version:     %" PRIu32 "\n", f.version());
  std::printf("alignment:   %" PRIu64 "\n", f.alignment());
  if (!f.tensors().empty()) std::printf("data offset: %" PRIu64 "\n", f.data_offset());
  std::printf("tensors:     %zu\n", f.tensors().size());
  std::printf("metadata:    %zu keys\n", f.metadata().size());
  int width = 0;
  for (const auto& kv : f.metadata()) width = std::max(width, static_cast<int>(std::min<std::size_t>(kv.key.size(), 48)));
  for (const auto& kv : f.metadata()) {
    std::printf("  %-*s  %-14s %s\n", width, one_line(kv.key).c_str(), type_label(kv.value).c_str(),
                kv.value.to_string(8, 120).c_str());
  }
  if (!types.empty()) {
    std::printf("tensor types:\n  %-8s %8s %16s %16s\n", "type", "tensors", "elements", "bytes");
    for (const auto& [id, s] : types) {
      std::printf("  %-8s %8" PRIu64 " %16" PRIu64 " %16" PRIu64 "\n", table.find(id)->name.c_str(), s.tensors,
                  s.elements, s.bytes);
    }
  }
  std::printf("total:       %" PRIu64 " parameters, %" PRIu64 " bytes (%s)\n", params, bytes, human_bytes(bytes).c_str());
  // A model of an architecture graft knows: its layers by kind (qwen35's hybrid pattern).
  if (auto mp = graft::ModelParams::from_gguf(f); mp) {
    std::string kinds;
    for (graft::LayerKind kind : {graft::LayerKind::attention, graft::LayerKind::gated_attention, graft::LayerKind::delta_net})
      if (const std::uint32_t n = mp->count(kind))
        kinds += (kinds.empty() ? "" : ", ") + std::to_string(n) + " " + std::string(graft::to_string(kind));
    std::printf("layers:      %u (%s)%s\n", mp->n_main_layers(), kinds.c_str(),
                mp->n_nextn ? (" + " + std::to_string(mp->n_nextn) + " MTP block").c_str() : "");
    // What a sequence holds besides the weights, in elements (the KV store's type sets the bytes).
    std::printf("kv cache:    %" PRIu64 " elements per token (K and V of %u attention layers)\n",
                mp->kv_elements_per_token(), mp->kv_layers());
    if (const std::uint64_t state = mp->recurrent_state_floats())
      std::printf("recurrent:   %" PRIu64 " f32 per sequence (%s; conv windows and delta-rule states of %u layers)\n", state,
                  human_bytes(state * 4).c_str(), mp->count(graft::LayerKind::delta_net));
  } else if (f.get_string("general.architecture")) {
    std::printf("layers:      not read (%s)\n", mp.status().message().c_str());
  }
  if (!tensors) return;
  std::printf("tensor list:\n  %-40s %-8s %-24s %14s %14s\n", "name", "type", "shape", "bytes", "file offset");
  for (const auto& t : f.tensors()) {
    std::printf("  %-40s %-8s %-24s %14" PRIu64 " %14" PRIu64 "\n", one_line(t.name).c_str(), table.find(t.type)->name.c_str(),
                shape(t).c_str(), t.bytes, f.data_offset() + t.offset);
  }
}

}  // namespace

int cmd_info(const Args& args) {
  po::options_description visible("usage: graft info MODEL [--tensors] [--json]\noptions");
  visible.add_options()("help,h", "show this help")("tensors", "list every tensor (name, type, shape, bytes, offset)")(
      "json", "print JSON instead of text")("plugin-dir", po::value<std::vector<std::string>>()->composing(),
                                            "extra folder searched for weight-format plugins (repeatable)");
  po::options_description all;
  all.add(visible).add_options()("model", po::value<std::string>(), "GGUF file");
  po::positional_options_description pos;
  pos.add("model", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args).options(all).positional(pos).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "graft info: %s (try 'graft info --help')\n", e.what());
    return 2;
  }
  if (vm.count("help")) {
    std::printf("%s", (std::ostringstream() << visible).str().c_str());
    return 0;
  }
  if (!vm.count("model")) {
    std::fprintf(stderr, "graft info: missing MODEL (usage: graft info MODEL [--tensors] [--json])\n");
    return 2;
  }
  // Type ids that weight-format plugins add are known to the loader too.
  std::vector<std::filesystem::path> dirs;
  if (vm.count("plugin-dir"))
    for (const auto& d : vm["plugin-dir"].as<std::vector<std::string>>()) dirs.emplace_back(d);
  PluginRegistry registry(PluginRegistry::default_search_dirs(dirs));
  DefaultHostServices host;
  auto formats = load_weight_formats(registry, host);
  if (!formats) {
    std::fprintf(stderr, "graft info: %s\n", formats.status().message().c_str());
    return 1;
  }
  const gguf::TypeTable& table = formats->types;
  auto file = File::open(vm["model"].as<std::string>(), table);
  if (!file) {
    std::fprintf(stderr, "graft info: %s\n", file.status().message().c_str());
    return 1;
  }
  const File& f = **file;
  std::map<TypeId, TypeSummary> types;
  std::uint64_t params = 0, bytes = 0;
  for (const auto& t : f.tensors()) {
    auto& s = types[t.type];
    ++s.tensors;
    s.elements += t.elements();
    s.bytes += t.bytes;
    params += t.elements();
    bytes += t.bytes;
  }
  if (vm.count("json")) {
    print_json(f, table, types, params, bytes, vm.count("tensors") > 0);
  } else {
    print_text(f, table, types, params, bytes, vm.count("tensors") > 0);
  }
  return 0;
}

}  // namespace graft::cli
