// The CPU backend plugin of a build, for the benchmark tools that drive kernels directly.
#pragma once

#include <cstdio>
#include <filesystem>
#include <memory>

#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"

namespace graft::bench {

// libgraft_backend_cpu.so from plugin_dir with `threads` threads (the backend keeps its library
// loaded); on failure prints the error and returns null.
inline std::shared_ptr<Backend> load_cpu_backend(const std::filesystem::path& plugin_dir, long threads) {
  auto lib = PluginLibrary::load(plugin_dir / "libgraft_backend_cpu.so");
  if (!lib) {
    std::fprintf(stderr, "error: %s\n", lib.status().message().c_str());
    return nullptr;
  }
  static DefaultHostServices host;
  Config cfg;
  cfg.set("threads", static_cast<std::int64_t>(threads));
  auto backend = (*lib)->create<Backend>(host, cfg);
  if (!backend) {
    std::fprintf(stderr, "error: %s\n", backend.status().message().c_str());
    return nullptr;
  }
  return *backend;
}

}  // namespace graft::bench
