// graft plugins: what the host finds on its search path, and why anything there does not load.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>

#include "cli/commands.hpp"
#include "common/human_bytes.hpp"
#include "cli/options.hpp"
#include "graft/backend.hpp"
#include "graft/extension.hpp"
#include "graft/kernel_library.hpp"
#include "gguf/gguf_types.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/profile_plugins.hpp"

namespace graft::cli {

namespace {

// A backend's device status.
std::string backend_status(const Backend& backend) {
  Status st = backend.status();
  if (!st.ok()) return "unavailable: " + st.message();
  std::string out;
  for (const auto& d : backend.devices())
    out += fmt::format("{}{} ({} total, {} free)", out.empty() ? "" : "; ", d.name, human_bytes(d.total_memory),
                       human_bytes(d.free_memory));
  return out.empty() ? "ok" : out;
}

// Creates the backend with its defaults and prints its device status and, verbose, the
// extensions the host knows that it offers.
void print_backend(PluginLibrary& lib, bool verbose) {
  DefaultHostServices host;
  auto backend = lib.create<Backend>(host, Config{});
  if (!backend) {
    std::printf("         device: unavailable: %s\n", backend.status().message().c_str());
    return;
  }
  std::printf("         device: %s\n", backend_status(**backend).c_str());
  if (!verbose) return;
  if (const auto* simd = find_extension<CpuSimdExtension>(**backend)) {
    const std::string name(CpuSimdExtension::kName);
    std::printf("         extension %s v%u: %s kernels, %u floats per vector; CPU features: %s\n", name.c_str(),
                CpuSimdExtension::kVersion, simd->level, simd->floats_per_vector, simd->cpu_features);
  }
}

// A kernel library's backend and the types it brings kernels for (by their ggml names where GGUF
// knows the id), and whether it implements the device KV store there.
void print_kernels(PluginLibrary& lib) {
  DefaultHostServices host;
  auto kernels = lib.create<KernelLibrary>(host, Config{});
  if (!kernels) {
    std::printf("         kernels: unavailable: %s\n", kernels.status().message().c_str());
    return;
  }
  const gguf::TypeTable table = gguf::TypeTable::builtin();
  std::string types;
  for (TypeId t : (*kernels)->types()) {
    const gguf::TypeInfo* info = table.find(t);
    types += (types.empty() ? "" : ", ") + (info ? std::string(info->name) : "type " + std::to_string(t));
  }
  std::printf("         kernels for backend %s: %s%s\n", std::string((*kernels)->backend()).c_str(),
              types.empty() ? "no weight types" : types.c_str(),
              (*kernels)->has_kv_store("device") ? "; the device KV store" : "");
}

}  // namespace

int cmd_plugins(const Args& args) {
  po::options_description opts("graft plugins [options]");
  opts.add_options()("help,h", "show this help")("verbose,v", "also list each plugin's description and profile keys");
  // --profile (its plugin_dirs) and --plugin-dir shape the search path, as for every command.
  add_profile_options(opts);
  auto vm = parse_options(args, opts);
  if (!vm) {
    std::fprintf(stderr, "graft plugins: %s\n", vm.status().message().c_str());
    return 2;
  }
  if (vm->count("help")) {
    std::cout << opts << "\n";
    return 0;
  }
  int exit_code = 1;
  auto profile = load_profile_or_report(*vm, "", exit_code);
  if (!profile) return exit_code;
  PluginRegistry registry = registry_for(*profile);
  std::printf("search path:\n");
  for (const auto& d : registry.search_dirs()) std::printf("  %s\n", d.c_str());

  const bool verbose = vm->count("verbose") > 0;
  int failures = 0, found = 0;
  std::printf("\n%-8s %-14s %-8s %-4s %s\n", "KIND", "NAME", "VERSION", "ABI", "PATH");
  for (auto& e : registry.scan()) {
    if (!e.shadowed_by.empty()) {
      std::printf("%-8s %-14s %-8s %-4s %s (shadowed by %s)\n", "-", "-", "-", "-", e.file.c_str(),
                  e.shadowed_by.c_str());
      continue;
    }
    if (!e.library) {
      ++failures;
      std::fprintf(stderr, "error: %s\n", e.error.message().c_str());
      continue;
    }
    ++found;
    const auto& d = e.library->descriptor();
    std::printf("%-8s %-14s %-8s %-4u %s\n", plugin_kind_name(d.kind), d.name, d.version, d.abi_version,
                e.file.c_str());
    if (d.kind == PluginKind::backend) print_backend(*e.library, verbose);
    if (d.kind == PluginKind::kernels) print_kernels(*e.library);
    if (verbose) {
      if (d.description) std::printf("         %s\n", d.description);
      // The loader has checked stdlib and sdk_hash against the host's; the compiler is information.
      std::printf("         built with %s, %s; SDK headers %s\n", d.compiler ? d.compiler : "(unknown compiler)",
                  d.stdlib, d.sdk_hash);
      for (const auto& k : e.library->config_keys())
        std::printf("         key %-16s %-18s %s%s\n", k.key, config_type_name(k.type), k.description,
                    k.required ? " (required)" : "");
    }
  }
  std::printf("\n%d plugin(s) loaded, %d failed\n", found, failures);
  return failures ? 1 : 0;
}

}  // namespace graft::cli
