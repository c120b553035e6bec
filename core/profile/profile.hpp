// A TOML profile: which model, backend, KV store, drafters, sampling and context to use, and
// where to look for plugins. Loaded and fully validated before anything is built; errors carry
// file:line:column.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "graft/config.hpp"
#include "graft/status.hpp"

namespace graft {

struct PluginChoice {
  std::string name;      // plugin name within its kind
  Config config;         // the table's other keys, checked against the plugin's spec later
  std::string location;  // "file:line:column" of the table, for later error messages
};

struct SamplingSettings {
  double temperature = 0.8;
  std::int64_t top_k = 40;
  double top_p = 0.95;
  double min_p = 0.05;
  double repeat_penalty = 1.0;
  std::int64_t repeat_last_n = 64;
  double presence_penalty = 0.0;
  std::int64_t seed = -1;  // -1: random
};

struct SpeculativeSettings {
  bool enabled = false;
  std::int64_t max_nodes = 16;
  std::int64_t max_depth = 8;
};

struct Profile {
  std::filesystem::path source;           // the file it was read from (empty: built-in defaults)
  std::filesystem::path model;            // relative paths resolved against the profile's folder
  PluginChoice backend{"cpu", {}, ""};
  PluginChoice kv{"device", {}, ""};
  std::vector<PluginChoice> drafters;
  SpeculativeSettings speculative;
  SamplingSettings sampling;
  std::int64_t context = 4096;
  std::int64_t max_tokens = 256;          // -n
  std::int64_t threads = 0;               // 0: all cores
  std::string prompt;
  std::vector<std::filesystem::path> plugin_dirs;  // resolved against the profile's folder

  // Parses and validates; every error is "file:line:column: message".
  static Expected<Profile> load(const std::filesystem::path& path);
  static Expected<Profile> parse(std::string_view toml, const std::filesystem::path& source_name);
};

}  // namespace graft
