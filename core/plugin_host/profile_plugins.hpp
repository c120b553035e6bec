// Joins profiles and the plugin host: finds every plugin a profile names and checks its table's
// keys against what the plugin declares, before any plugin object is created.
#pragma once

#include "graft/status.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "profile/profile.hpp"

namespace graft {

// The search path for a profile: its plugin_dirs (with --plugin-dir in front), then the defaults.
PluginRegistry registry_for(const Profile& profile);

// Every plugin the profile names exists, loads (ABI checked) and accepts the profile's keys.
// Errors are one line with the profile location of the offending table or key.
Status check_profile_plugins(const Profile& profile, PluginRegistry& registry);

}  // namespace graft
