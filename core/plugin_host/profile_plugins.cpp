#include "plugin_host/profile_plugins.hpp"

#include "profile/plugin_config_check.hpp"

namespace graft {

PluginRegistry registry_for(const Profile& profile) {
  return PluginRegistry(PluginRegistry::default_search_dirs(profile.plugin_dirs));
}

Status check_profile_plugins(const Profile& profile, PluginRegistry& registry) {
  std::vector<std::shared_ptr<PluginLibrary>> keep;  // the spans below point into these libraries
  return check_profile_plugins(
      profile, [&](PluginKind kind, std::string_view name) -> Expected<std::span<const ConfigKeySpec>> {
        auto lib = registry.find(kind, name);
        if (!lib) return std::move(lib).status();
        keep.push_back(*lib);
        const auto& d = (*lib)->descriptor();
        return std::span<const ConfigKeySpec>(d.config_keys, d.n_config_keys);
      });
}

}  // namespace graft
