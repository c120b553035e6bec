// The one symbol a plugin library exports: a plain extern "C" function returning a descriptor the
// host checks before trusting anything else in the library. abi_version and struct_size come first
// and never move, so any future host can read them from any plugin and refuse a mismatch with both
// numbers in the message; then the host compares the standard library and the SDK header hash the
// plugin was built with against its own.
#pragma once

#include <cstdint>
#include <exception>
#include <string>

#include "graft/config.hpp"
#include "graft/host.hpp"
#include "graft/plugin_object.hpp"
#include "graft/status.hpp"
#include "graft/toolchain.hpp"
#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

enum class PluginKind : std::uint32_t {
  backend = 1,        // creates a Backend
  weight_format = 2,  // creates a WeightFormat
  kv_store = 3,       // creates a KvStoreFactory
  drafter = 4,        // creates a DrafterFactory
  kernels = 5,        // creates a KernelLibrary (one backend's kernels for other plugins' formats)
};

inline const char* plugin_kind_name(PluginKind kind) noexcept {
  switch (kind) {
    case PluginKind::backend: return "backend";
    case PluginKind::weight_format: return "quant";
    case PluginKind::kv_store: return "kvstore";
    case PluginKind::drafter: return "drafter";
    case PluginKind::kernels: return "kernels";
  }
  return "unknown";
}

using CreateFn = PluginObject* (*)(const HostServices& host, const Config& config, Status& error) noexcept;

struct PluginDescriptor {
  std::uint32_t abi_version;  // GRAFT_ABI_VERSION the plugin was built against
  std::uint32_t struct_size;  // sizeof(PluginDescriptor) in that build
  PluginKind kind;
  const char* name;           // unique within its kind; the file is libgraft_<kind>_<name>.so
  const char* version;        // the plugin's own version
  const char* description;
  const ConfigKeySpec* config_keys;  // keys its profile table accepts
  std::uint32_t n_config_keys;
  CreateFn create;            // config has been validated against config_keys
  // What the plugin was built with. The defaults are expanded in the plugin's own compile, so a
  // descriptor written with the nine fields above records its build without saying so.
  const char* stdlib = GRAFT_STDLIB_TAG;         // must equal the host's
  const char* sdk_hash = GRAFT_SDK_HEADER_HASH;  // must equal the host's
  const char* compiler = GRAFT_COMPILER_TAG;     // shown by `graft plugins -v`, not checked
};

// The entry point's type: what dlsym("graft_plugin") points at.
using DescriptorFn = const PluginDescriptor*();

// Runs a factory body, turning any exception into a Status so none crosses the boundary.
template <class F>
PluginObject* guarded_create(Status& error, F&& body) noexcept {
  try {
    return body();
  } catch (const std::exception& e) {
    error = Status(Errc::internal, e.what());
  } catch (...) {
    error = Status(Errc::internal, "unknown exception in plugin factory");
  }
  return nullptr;
}

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft

// The entry point, declared here so that GRAFT_PLUGIN's definition must match it. C linkage: its
// name is the same whatever the compiler, and the host finds it with dlsym alone.
extern "C" __attribute__((visibility("default"))) const ::graft::PluginDescriptor* graft_plugin(void);

// Exports `descriptor` (a PluginDescriptor with static storage) through graft_plugin. Use it once
// per library, at global scope.
#define GRAFT_PLUGIN(descriptor)                                                                    \
  extern "C" __attribute__((visibility("default"))) const ::graft::PluginDescriptor* graft_plugin(void) { \
    return &(descriptor);                                                                           \
  }

#define GRAFT_PLUGIN_SYMBOL "graft_plugin"
