// `graft info MODEL [--tensors] [--json]`: what a GGUF file holds, read through the same
// validating loader the engine uses, so a file that info accepts is one the engine can map.
#include <boost/program_options.hpp>

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <map>
#include <sstream>
#include <string>

#include "cli/commands.hpp"
#include "gguf/gguf_file.hpp"

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

std::string human_bytes(std::uint64_t n) {
  char buf[64];
  if (n >= (1ull << 30)) {
    std::snprintf(buf, sizeof buf, "%.2f GiB", static_cast<double>(n) / (1ull << 30));
  } else {
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(n) / (1ull << 20));
  }
  return buf;
}

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

// JSON must be valid UTF-8: bytes that do not form a sequence become U+FFFD.
void json_string(std::string& out, std::string_view s) {
  out += '"';
  for (std::size_t k = 0; k < s.size();) {
    auto c = static_cast<unsigned char>(s[k]);
    if (c < 0x80) {
      if (c == '"' || c == '\\') {
        out += '\\';
        out += static_cast<char>(c);
      } else if (c < 0x20 || c == 0x7f) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
      ++k;
      continue;
    }
    std::size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c < 0xE0 ? 2 : 0;
    bool ok = len > 0 && k + len <= s.size();
    for (std::size_t j = 1; ok && j < len; ++j) ok = (static_cast<unsigned char>(s[k + j]) & 0xC0) == 0x80;
    if (ok) {
      out.append(s.substr(k, len));
      k += len;
    } else {
      out += "\\ufffd";
      ++k;
    }
  }
  out += '"';
}

void json_value(std::string& out, const Value& v, std::size_t max_items) {
  switch (v.type) {
    case ValueType::string: json_string(out, v.str); return;
    case ValueType::boolean: out += v.b ? "true" : "false"; return;
    case ValueType::f32:
    case ValueType::f64:
      if (!std::isfinite(v.f)) {
        out += "null";
      } else {
        char buf[40];
        std::snprintf(buf, sizeof buf, v.type == ValueType::f32 ? "%.9g" : "%.17g", v.f);
        out += buf;
      }
      return;
    case ValueType::array: {
      out += "{\"elem_type\": \"" + std::string(gguf::value_type_name(v.elem_type)) +
             "\", \"count\": " + std::to_string(v.items.size()) + ", \"head\": [";
      for (std::size_t k = 0; k < v.items.size() && k < max_items; ++k) {
        if (k) out += ", ";
        json_value(out, v.items[k], max_items);
      }
      out += "]}";
      return;
    }
    default: out += gguf::is_signed_integer(v.type) ? std::to_string(v.i) : std::to_string(v.u);
  }
}

void print_json(const File& f, const std::map<TypeId, TypeSummary>& types, std::uint64_t params,
                std::uint64_t bytes, bool tensors) {
  const auto& table = gguf::TypeTable::builtin();
  std::string o = "{\n  \"file\": ";
  json_string(o, f.name());
  o += ",\n  \"size\": " + std::to_string(f.file_size()) + ",\n  \"version\": " + std::to_string(f.version()) +
       ",\n  \"alignment\": " + std::to_string(f.alignment()) + ",\n  \"data_offset\": " +
       std::to_string(f.data_offset()) + ",\n  \"tensor_count\": " + std::to_string(f.tensors().size()) +
       ",\n  \"metadata\": [";
  for (std::size_t k = 0; k < f.metadata().size(); ++k) {
    const auto& kv = f.metadata()[k];
    o += k ? ",\n    {\"key\": " : "\n    {\"key\": ";
    json_string(o, kv.key);
    o += ", \"type\": \"" + std::string(gguf::value_type_name(kv.value.type)) + "\", \"value\": ";
    json_value(o, kv.value, 8);
    o += "}";
  }
  o += "\n  ],\n  \"types\": [";
  bool first = true;
  for (const auto& [id, s] : types) {
    o += first ? "\n    " : ",\n    ";
    first = false;
    o += "{\"type\": \"" + table.find(id)->name + "\", \"tensors\": " + std::to_string(s.tensors) +
         ", \"elements\": " + std::to_string(s.elements) + ", \"bytes\": " + std::to_string(s.bytes) + "}";
  }
  o += "\n  ],\n  \"parameters\": " + std::to_string(params) + ",\n  \"tensor_bytes\": " + std::to_string(bytes);
  if (tensors) {
    o += ",\n  \"tensors\": [";
    for (std::size_t k = 0; k < f.tensors().size(); ++k) {
      const auto& t = f.tensors()[k];
      o += k ? ",\n    {\"name\": " : "\n    {\"name\": ";
      json_string(o, t.name);
      o += ", \"type\": \"" + table.find(t.type)->name + "\", \"shape\": " + shape(t) +
           ", \"bytes\": " + std::to_string(t.bytes) + ", \"offset\": " + std::to_string(f.data_offset() + t.offset) +
           "}";
    }
    o += "\n  ]";
  }
  o += "\n}\n";
  std::fputs(o.c_str(), stdout);
}

void print_text(const File& f, const std::map<TypeId, TypeSummary>& types, std::uint64_t params,
                std::uint64_t bytes, bool tensors) {
  const auto& table = gguf::TypeTable::builtin();
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
      "json", "print JSON instead of text");
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
  auto file = File::open(vm["model"].as<std::string>());
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
    print_json(f, types, params, bytes, vm.count("tensors") > 0);
  } else {
    print_text(f, types, params, bytes, vm.count("tensors") > 0);
  }
  return 0;
}

}  // namespace graft::cli
