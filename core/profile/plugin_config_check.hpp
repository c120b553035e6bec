// Plugin tables ([backend], [kv], [[drafter]]) carry keys only the plugin understands. Each
// plugin declares them (ConfigKeySpec); these functions judge a profile's keys against that list
// before any plugin code runs, with the file:line:column of the offending key.
#pragma once

#include <functional>
#include <span>
#include <string>
#include <string_view>

#include "graft/config.hpp"
#include "graft/plugin.hpp"
#include "graft/status.hpp"
#include "profile/profile.hpp"

namespace graft {

// Unknown key (with a suggestion and the valid keys), wrong type (an integer passes for a real),
// out of range (each list element too), missing required key. `what` names the plugin in the
// message: "drafter 'ngram'". Reports the first problem in file order.
Status check_plugin_config(const PluginChoice& choice, std::span<const ConfigKeySpec> specs, std::string_view what);

// The Config to hand the plugin's create() once check_plugin_config passed: integers widened to
// reals where the spec says real, integer lists to real lists, empty arrays given the declared
// list type. So a plugin's get_real / get_real_list find what the spec promised.
Config normalized_plugin_config(const PluginChoice& choice, std::span<const ConfigKeySpec> specs);

// "backend 'cpu'", "kv store 'device'", "drafter 'ngram'".
std::string plugin_label(PluginKind kind, std::string_view name);

// The declared keys of the plugin `name` of `kind`; an error (missing plugin, ABI mismatch) is
// returned as is. Supplied by the plugin host, which owns loading.
using PluginKeyLookup = std::function<Expected<std::span<const ConfigKeySpec>>(PluginKind kind, std::string_view name)>;

// Checks the backend, KV store and every drafter of `profile` with check_plugin_config.
// `graft profile check` and the commands that build a pipeline call this once plugins load.
Status check_profile_plugins(const Profile& profile, const PluginKeyLookup& lookup);

}  // namespace graft
