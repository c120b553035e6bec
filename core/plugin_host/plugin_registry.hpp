// Finds plugin libraries. Search order: the profile's plugin_dirs, then $GRAFT_PLUGIN_PATH
// (':'-separated), then <exe>/../lib/graft/plugins (the build tree and a relocated install), then
// the configured install location. The first file with the right name wins.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/plugin.hpp"
#include "graft/status.hpp"
#include "plugin_host/plugin_library.hpp"

namespace graft {

struct PluginScanEntry {
  std::filesystem::path file;
  std::shared_ptr<PluginLibrary> library;  // null when loading failed
  Status error;                            // why it failed
  std::filesystem::path shadowed_by;       // non-empty: an earlier directory has the same plugin
};

class PluginRegistry {
 public:
  explicit PluginRegistry(std::vector<std::filesystem::path> search_dirs);

  // The standard search path for the given profile plugin_dirs.
  static std::vector<std::filesystem::path> default_search_dirs(
      const std::vector<std::filesystem::path>& profile_dirs = {});

  const std::vector<std::filesystem::path>& search_dirs() const { return dirs_; }

  // Loads (or reuses) the plugin of this kind and name. Not found is one line naming every
  // directory searched.
  Expected<std::shared_ptr<PluginLibrary>> find(PluginKind kind, std::string_view name);

  // Every libgraft_*.so in the search path (only those of one kind when given), loaded, in
  // search order.
  std::vector<PluginScanEntry> scan(std::optional<PluginKind> only = std::nullopt);

 private:
  std::vector<std::filesystem::path> dirs_;
  std::vector<std::shared_ptr<PluginLibrary>> loaded_;
};

}  // namespace graft
