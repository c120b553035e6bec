#include "plugin_host/plugin_library.hpp"

#include <fmt/format.h>

#include <boost/dll/shared_library.hpp>
#include <dlfcn.h>

#include <string_view>
#include <system_error>

namespace graft {

struct PluginLibrary::Handle {
  boost::dll::shared_library lib;
};

PluginLibrary::~PluginLibrary() = default;

namespace {
// Boost.DLL clears dlerror() and reports a generic code; the loader's own text names the real
// cause (wrong ELF class, missing dependency, not an ELF file), so ask dlopen once more.
std::string dlopen_error(const std::filesystem::path& file, std::string fallback) {
  void* h = ::dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h) {
    ::dlclose(h);
    return fallback;
  }
  const char* why = ::dlerror();
  return why ? why : fallback;
}

// "FILE: standard library differs: plugin 'X', host 'Y'; rebuild ..." when the plugin's value is
// not the host's.
Status check_build(const std::string& where, const char* what, const char* plugin_value, const char* host_value) {
  if (plugin_value && std::string_view(plugin_value) == host_value) return Status::success();
  return Status(Errc::abi_mismatch, fmt::format("{}: {} differs: plugin '{}', host '{}'; rebuild the plugin against "
                                                "this graft SDK",
                                                where, what, plugin_value ? plugin_value : "(none)", host_value));
}
}  // namespace

std::string plugin_file_name(PluginKind kind, std::string_view name) {
  return fmt::format("libgraft_{}_{}.so", plugin_kind_name(kind), name);
}

bool parse_plugin_kind(std::string_view text, PluginKind& kind) {
  for (PluginKind k : {PluginKind::backend, PluginKind::weight_format, PluginKind::kv_store, PluginKind::drafter,
                       PluginKind::kernels}) {
    if (text == plugin_kind_name(k)) {
      kind = k;
      return true;
    }
  }
  return false;
}

Expected<std::shared_ptr<PluginLibrary>> PluginLibrary::load(const std::filesystem::path& file) {
  const std::string where = file.string();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(file, ec))
    return Status(Errc::not_found, fmt::format("{}: no such plugin file", where));

  auto handle = std::make_unique<Handle>();
  boost::dll::fs::error_code load_ec;
  // RTLD_LOCAL: two plugins may bundle different versions of the same helper library.
  handle->lib.load(file, load_ec, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local);
  if (load_ec) {
    return Status(Errc::io_error,
                  fmt::format("{}: cannot load shared library: {}", where, dlopen_error(file, load_ec.message())));
  }
  if (!handle->lib.has(GRAFT_PLUGIN_SYMBOL))
    return Status(Errc::invalid_argument,
                  fmt::format("{}: not a graft plugin (no '{}' symbol exported)", where, GRAFT_PLUGIN_SYMBOL));

  // A plain extern "C" function: the plugin needs no Boost to export it.
  auto& descriptor_fn = handle->lib.get<DescriptorFn>(GRAFT_PLUGIN_SYMBOL);
  const PluginDescriptor* desc = descriptor_fn();
  if (!desc) return Status(Errc::invalid_argument, fmt::format("{}: graft_plugin returned no descriptor", where));
  // abi_version and struct_size are the first fields in every ABI version: safe to read first.
  if (desc->abi_version != kAbiVersion)
    return Status(Errc::abi_mismatch,
                  fmt::format("{}: plugin ABI version {} does not match host ABI version {}; rebuild the "
                              "plugin against graft SDK ABI {}",
                              where, desc->abi_version, kAbiVersion, kAbiVersion));
  if (desc->struct_size != sizeof(PluginDescriptor))
    return Status(Errc::abi_mismatch,
                  fmt::format("{}: plugin descriptor is {} bytes, host expects {} (same ABI version, "
                              "different SDK headers); rebuild the plugin",
                              where, desc->struct_size, sizeof(PluginDescriptor)));
  // Same layout from here on. The standard library's types cross the boundary, so it must be the
  // host's; equal header hashes mean the plugin saw exactly these interfaces.
  if (Status st = check_build(where, "standard library", desc->stdlib, GRAFT_STDLIB_TAG); !st.ok()) return st;
  if (Status st = check_build(where, "SDK header hash", desc->sdk_hash, GRAFT_SDK_HEADER_HASH); !st.ok()) return st;
  const auto kind_value = static_cast<std::uint32_t>(desc->kind);
  if (kind_value < 1 || kind_value > static_cast<std::uint32_t>(PluginKind::kernels))
    return Status(Errc::invalid_argument, fmt::format("{}: unknown plugin kind {}", where, kind_value));
  if (!desc->name || !*desc->name || !desc->version || !desc->create)
    return Status(Errc::invalid_argument, fmt::format("{}: descriptor lacks a name, version or factory", where));
  const std::string expected_file = plugin_file_name(desc->kind, desc->name);
  if (file.filename() != expected_file)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: descriptor declares {} '{}', whose file must be named {}", where,
                              plugin_kind_name(desc->kind), desc->name, expected_file));
  if (desc->n_config_keys && !desc->config_keys)
    return Status(Errc::invalid_argument, fmt::format("{}: descriptor declares config keys but no table", where));

  std::shared_ptr<PluginLibrary> lib(new PluginLibrary());
  lib->path_ = file;
  lib->handle_ = std::move(handle);
  lib->desc_ = desc;
  return lib;
}

std::vector<ConfigKeySpec> PluginLibrary::config_keys() const {
  return {desc_->config_keys, desc_->config_keys + desc_->n_config_keys};
}

Expected<PluginObject*> PluginLibrary::create_raw(const HostServices& host, const Config& config) {
  Status err;
  PluginObject* obj = desc_->create(host, config, err);
  if (!obj) {
    if (err.ok()) err = Status(Errc::internal, "factory returned nothing and no error");
    return Status(err.code(), fmt::format("{} plugin '{}' ({}): {}", plugin_kind_name(desc_->kind), desc_->name,
                                          path_.string(), err.message()));
  }
  return obj;
}

}  // namespace graft
