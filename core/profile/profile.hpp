// A TOML profile: which model, backend, KV store, drafters, sampling and context to use, and
// where to look for plugins. Loaded and fully validated before anything is built; errors carry
// file:line:column. This struct is the single source of truth: the schema (profile_schema.hpp),
// the command-line overrides (cli/options.hpp) and `graft profile show` all read and write it.
// No toml++ type appears here: plugins and most of the host never see the parser.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <utility>
#include <string>
#include <string_view>
#include <vector>

#include "graft/config.hpp"
#include "graft/status.hpp"

namespace graft {

struct PluginChoice {
  std::string name;      // plugin name within its kind
  Config config;         // the table's other keys, checked against the plugin's spec later
  std::string location;  // "file:line:column" of the table, for later error messages
  // "file:line:column" of each key in `config`, so a plugin-config error points at its line.
  std::map<std::string, std::string, std::less<>> key_locations;
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
  // Added to a token's logit before anything else (OpenAI's logit_bias; a server request field,
  // not a profile key): (token id, bias), ids outside the vocabulary ignored.
  std::vector<std::pair<std::int32_t, float>> logit_bias;
};

struct SpeculativeSettings {
  bool enabled = false;
  std::int64_t max_nodes = 16;
  std::int64_t max_depth = 8;
  bool adaptive = true;
  std::int64_t draft_length = 0;  // 0: learnt per drafter; N: pinned
  // Opt-in: the round policy's learnt costs, chances and gains kept in this file across runs
  // (read at start when it exists and fits the model and drafters, written at the end).
  std::filesystem::path policy_file;
};

struct Profile {
  std::filesystem::path source;           // the file it was read from (empty: built-in defaults)
  std::filesystem::path model;            // relative paths resolved against the profile's folder
  PluginChoice backend{"cpu", {}, "", {}};
  PluginChoice kv{"device", {}, "", {}};
  std::vector<PluginChoice> drafters;
  SpeculativeSettings speculative;
  SamplingSettings sampling;
  std::int64_t context = 4096;            // [context] size
  std::int64_t max_tokens = 256;          // [context] max_tokens, -n; -1: until EOS or context end
  std::int64_t threads = 0;               // [backend] threads; 0: all cores
  std::string prompt;                     // [generation] prompt
  std::vector<std::filesystem::path> plugin_dirs;  // resolved against the profile's folder
  // --profile auto: the backend, KV store, K/V types and context are chosen at load for the memory
  // there is (core/engine/auto_profile.hpp); settings given on the command line are kept.
  bool auto_choice = false;

  // Where each setting came from: "sampling.temperature" -> "file:line:column" or
  // "command line: --temp". Absent: the built-in default. Lets later stages (model too big for
  // context.size, ...) point at the line to fix.
  std::map<std::string, std::string, std::less<>> locations;

  // The built-in defaults (what a profile file with no keys gives), for commands run without
  // --profile.
  static Profile builtin();

  // Parses and validates; every error is "file:line:column: message" on one line.
  static Expected<Profile> load(const std::filesystem::path& path);
  static Expected<Profile> parse(std::string_view toml, const std::filesystem::path& source_name);

  // Where `setting` ("context.size") was set, for error messages: its location, else the
  // profile file, else "built-in profile".
  std::string where(std::string_view setting) const;
};

}  // namespace graft
