// Plain key/value configuration handed to plugins. Plugins declare the keys they accept
// (ConfigKeySpec) so the host validates a profile's plugin tables, with file:line:column, before
// any plugin code runs. No toml++ type crosses the boundary.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "graft/version.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

enum class ConfigType : std::uint32_t {
  boolean,
  integer,
  real,  // accepts integers too
  string,
  integer_list,
  real_list,
  string_list,
  // A size in bytes: an integer, or a string with a binary unit ("32GiB", "512 MiB", "1.5G"). The
  // host checks and converts it: the plugin reads an integer (get_int).
  bytes,
};

inline const char* config_type_name(ConfigType t) noexcept {
  switch (t) {
    case ConfigType::boolean: return "boolean";
    case ConfigType::integer: return "integer";
    case ConfigType::real: return "number";
    case ConfigType::string: return "string";
    case ConfigType::integer_list: return "array of integers";
    case ConfigType::real_list: return "array of numbers";
    case ConfigType::string_list: return "array of strings";
    case ConfigType::bytes: return "size in bytes (\"32GiB\")";
  }
  return "?";
}

struct ConfigKeySpec {
  const char* key;
  ConfigType type;
  const char* description;
  double min = -1e300;  // inclusive bounds for integer/real (and each list element)
  double max = 1e300;
  bool required = false;
};

using ConfigValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>,
                                 std::vector<double>, std::vector<std::string>>;

// Concrete, header-only so host and plugins agree on its layout through the ABI version.
class Config {
 public:
  Config() = default;

  void set(std::string key, ConfigValue value) { values_[std::move(key)] = std::move(value); }
  bool has(std::string_view key) const { return values_.find(std::string(key)) != values_.end(); }
  std::vector<std::string> keys() const {
    std::vector<std::string> k;
    for (const auto& [name, v] : values_) k.push_back(name);
    return k;
  }

  std::optional<bool> get_bool(std::string_view key) const { return get<bool>(key); }
  std::optional<std::int64_t> get_int(std::string_view key) const { return get<std::int64_t>(key); }
  std::optional<double> get_real(std::string_view key) const {
    if (auto i = get<std::int64_t>(key)) return static_cast<double>(*i);
    return get<double>(key);
  }
  std::optional<std::string> get_string(std::string_view key) const { return get<std::string>(key); }
  std::optional<std::vector<std::int64_t>> get_int_list(std::string_view key) const {
    return get<std::vector<std::int64_t>>(key);
  }
  std::optional<std::vector<double>> get_real_list(std::string_view key) const {
    return get<std::vector<double>>(key);
  }
  std::optional<std::vector<std::string>> get_string_list(std::string_view key) const {
    return get<std::vector<std::string>>(key);
  }

  const std::map<std::string, ConfigValue, std::less<>>& values() const { return values_; }

 private:
  template <class T>
  std::optional<T> get(std::string_view key) const {
    auto it = values_.find(key);
    if (it == values_.end()) return std::nullopt;
    if (const T* v = std::get_if<T>(&it->second)) return *v;
    return std::nullopt;
  }

  std::map<std::string, ConfigValue, std::less<>> values_;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
