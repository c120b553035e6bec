// The profile schema as data: one table of key specs per section, each naming the Profile field
// it fills, its range and its help text. The TOML parser, the command-line overrides, the writer
// behind `graft profile show` and docs/profiles.md all follow these tables, so a key is added in
// exactly one place.
#pragma once

#include <cstdint>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "profile/profile.hpp"

namespace graft::schema {

// Each alternative reaches one Profile field; the field's C++ type is the key's value type.
template <class T>
using Accessor = T& (*)(Profile&);
using Field = std::variant<Accessor<bool>, Accessor<std::int64_t>, Accessor<double>, Accessor<std::string>,
                           Accessor<std::filesystem::path>,                 // string, resolved
                           Accessor<std::vector<std::filesystem::path>>>;  // array of strings, resolved

inline constexpr double kNoBound = std::numeric_limits<double>::infinity();

struct KeySpec {
  std::string_view key;
  Field field;
  double min = -kNoBound;  // inclusive bounds for integer and real keys
  double max = kNoBound;
  bool required = false;
  bool non_empty = false;  // strings and paths: "" is an error (plugin names, paths)
  // Integer keys: a word also accepted, stored as 0 and decided later (context.size = "auto": the
  // largest context that fits, chosen by the memory planner).
  std::string_view auto_word = {};
  std::string_view help = {};  // one line, for --help, `profile show` and the docs
};

struct SectionSpec {
  std::string_view name;  // "" for the top level
  std::span<const KeySpec> keys;
  bool array_of_tables = false;  // [[drafter]]
  // Plugin tables ([backend], [kv], [[drafter]]): the choice this table fills (for an array, a
  // new element). Keys not in `keys` go into its Config, checked later against the plugin.
  PluginChoice& (*plugin)(Profile&) = nullptr;
  std::string_view plugin_kind = {};  // "backend", "kv store", "drafter": names the plugin in messages
  std::string_view help = {};
};

// Top level ("") first, then the tables in the order a profile file lists them.
std::span<const SectionSpec> sections();
const SectionSpec* find_section(std::string_view name);
const KeySpec* find_key(const SectionSpec& section, std::string_view key);
// The section defining a fixed key of that name (for "'seed' belongs in [sampling]").
const SectionSpec* section_defining(std::string_view key);

// "integer", "number", "boolean", "string", "array of strings".
const char* type_name(const KeySpec& spec);
// Table name as written in a file: "[sampling]", "[[drafter]]".
std::string table_header(const SectionSpec& section);
// "sampling.temperature", "plugin_dirs", "drafter[1].name" (index for arrays of tables);
// with an empty key, the table itself: "sampling", "drafter[1]".
std::string setting_name(const SectionSpec& section, std::string_view key, std::optional<std::size_t> index = {});

// The range in words: "0..100", ">= 0", "<= 2"; empty when unbounded.
std::string range_text(double min, double max);
// Numbers as a user wrote them: 150, 0.5, 16777216.
std::string format_number(double value);
std::string format_number(std::int64_t value);

// "setting = value is out of range: must be in 0..100" (or ">= 0"): shared with the plugin
// config check so both read alike.
std::string out_of_range(std::string_view setting, const std::string& value_text, double min, double max);

// The message body for a value outside the key's range ("sampling.temperature = 150 is out of
// range: must be in 0..100"), or nothing when it is inside. NaN is always outside.
std::optional<std::string> range_error(const KeySpec& spec, std::string_view setting, double value);
std::optional<std::string> range_error(const KeySpec& spec, std::string_view setting, std::int64_t value);

}  // namespace graft::schema
