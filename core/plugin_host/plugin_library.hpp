// One loaded plugin library. Loading checks the descriptor (ABI version, struct size, kind, name
// against the file name) before anything else in the library is trusted. Every object created
// through it holds a shared reference to it, so the code of an object's methods and destructor
// stays mapped while the object lives, however the host drops its own handles.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graft/plugin.hpp"
#include "graft/status.hpp"

namespace graft {

class PluginLibrary : public std::enable_shared_from_this<PluginLibrary> {
 public:
  // Errors are one line: "FILE: cause".
  static Expected<std::shared_ptr<PluginLibrary>> load(const std::filesystem::path& file);
  ~PluginLibrary();

  const PluginDescriptor& descriptor() const { return *desc_; }
  PluginKind kind() const { return desc_->kind; }
  std::string name() const { return desc_->name; }
  const std::filesystem::path& path() const { return path_; }
  std::vector<ConfigKeySpec> config_keys() const;

  // Calls the plugin's factory. The caller has validated config against config_keys().
  template <class T>
  Expected<std::shared_ptr<T>> create(const HostServices& host, const Config& config) {
    auto raw = create_raw(host, config);
    if (!raw) return std::move(raw).status();
    // The descriptor's kind fixes the concrete interface (no dynamic_cast across libraries).
    return adopt(std::unique_ptr<T>(static_cast<T*>(raw.value())));
  }

  // Ties an object the plugin made (a KvStore, a Drafter, a Buffer) to this library's lifetime.
  template <class T>
  std::shared_ptr<T> adopt(std::unique_ptr<T> object) {
    auto self = shared_from_this();
    return std::shared_ptr<T>(object.release(), [self](T* p) { delete p; });
  }

 private:
  struct Handle;
  PluginLibrary() = default;
  Expected<PluginObject*> create_raw(const HostServices& host, const Config& config);

  std::filesystem::path path_;
  std::unique_ptr<Handle> handle_;
  const PluginDescriptor* desc_ = nullptr;
};

// Expected file name of a plugin: libgraft_<kind>_<name>.so.
std::string plugin_file_name(PluginKind kind, std::string_view name);
// Parses "backend"/"quant"/"kvstore"/"drafter".
bool parse_plugin_kind(std::string_view text, PluginKind& kind);

}  // namespace graft
