#include "profile/plugin_config_check.hpp"

#include <algorithm>
#include <charconv>
#include <utility>
#include <vector>

#include "common/byte_size.hpp"
#include "profile/profile_schema.hpp"
#include "profile/suggest.hpp"

namespace graft {

namespace {

const char* value_type_name(const ConfigValue& v) {
  switch (v.index()) {
    case 0: return "boolean";
    case 1: return "integer";
    case 2: return "float";
    case 3: return "string";
    case 4: return "array of integers";
    case 5: return "array of floats";
    case 6: return "array of strings";
  }
  return "?";
}

bool is_list(ConfigType t) {
  return t == ConfigType::integer_list || t == ConfigType::real_list || t == ConfigType::string_list;
}

bool is_empty_list(const ConfigValue& v) {
  return std::visit(
      [](const auto& x) {
        if constexpr (requires { x.empty(); } && !std::is_same_v<std::decay_t<decltype(x)>, std::string>)
          return x.empty();
        else
          return false;
      },
      v);
}

bool type_matches(ConfigType t, const ConfigValue& v) {
  if (is_list(t) && is_empty_list(v)) return true;  // `[]` has no element type to disagree with
  switch (t) {
    case ConfigType::boolean: return std::holds_alternative<bool>(v);
    case ConfigType::integer: return std::holds_alternative<std::int64_t>(v);
    case ConfigType::real: return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v);
    case ConfigType::string: return std::holds_alternative<std::string>(v);
    case ConfigType::integer_list: return std::holds_alternative<std::vector<std::int64_t>>(v);
    case ConfigType::real_list:
      return std::holds_alternative<std::vector<std::int64_t>>(v) || std::holds_alternative<std::vector<double>>(v);
    case ConfigType::string_list: return std::holds_alternative<std::vector<std::string>>(v);
    case ConfigType::bytes: return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<std::string>(v);
  }
  return false;
}

// (line, column) from "file:line:column", to report problems in file order; keys without a
// location (set by code) sort last.
std::pair<long, long> line_column(const std::string& location) {
  auto number_before = [&](std::size_t end, std::size_t& start) -> long {
    start = location.rfind(':', end - 1);
    if (start == std::string::npos) return -1;
    long v = -1;
    auto [p, ec] = std::from_chars(location.data() + start + 1, location.data() + end, v);
    return ec == std::errc() && p == location.data() + end ? v : -1;
  };
  if (location.empty()) return {1L << 30, 0};
  std::size_t col_start = 0, line_start = 0;
  const long column = number_before(location.size(), col_start);
  if (column < 0 || col_start == 0) return {1L << 30, 0};
  const long line = number_before(col_start, line_start);
  return line < 0 ? std::pair<long, long>{1L << 30, 0} : std::pair<long, long>{line, column};
}

class Checker {
 public:
  Checker(const PluginChoice& choice, std::span<const ConfigKeySpec> specs, std::string_view what)
      : choice_(choice), specs_(specs), what_(what) {}

  Status run() const {
    std::vector<std::string> keys = choice_.config.keys();
    std::stable_sort(keys.begin(), keys.end(), [&](const std::string& a, const std::string& b) {
      return line_column(location_of(a)) < line_column(location_of(b));
    });
    for (const auto& key : keys) GRAFT_TRY(check_key(key, choice_.config.values().find(key)->second));
    for (const auto& spec : specs_) {
      if (spec.required && !choice_.config.has(spec.key))
        return fail(choice_.location, "missing required key '" + std::string(spec.key) + "' (" +
                                          config_type_name(spec.type) + ": " + spec.description + ")");
    }
    return Status::success();
  }

 private:
  std::string location_of(const std::string& key) const {
    auto it = choice_.key_locations.find(key);
    return it != choice_.key_locations.end() ? it->second : choice_.location;
  }

  Status fail(const std::string& location, const std::string& message) const {
    const std::string prefix = location.empty() ? "" : location + ": ";
    return Status(Errc::invalid_argument, prefix + std::string(what_) + ": " + message);
  }

  const ConfigKeySpec* find(std::string_view key) const {
    for (const auto& s : specs_)
      if (s.key && key == s.key) return &s;
    return nullptr;
  }

  Status check_key(const std::string& key, const ConfigValue& value) const {
    const std::string at = location_of(key);
    const ConfigKeySpec* spec = find(key);
    if (!spec) {
      std::vector<std::string> valid;
      for (const auto& s : specs_) valid.emplace_back(s.key);
      std::string message = "unknown key '" + key + "'";
      if (valid.empty()) return fail(at, message + "; " + std::string(what_) + " takes no settings");
      if (auto guess = closest_match(key, valid)) message += "; did you mean '" + *guess + "'?";
      message += message.back() == '?' ? " valid keys: " : "; valid keys: ";
      return fail(at, message + join_names(valid));
    }
    if (!type_matches(spec->type, value))
      return fail(at, key + ": expected " + config_type_name(spec->type) + ", got " + value_type_name(value));

    if (spec->type == ConfigType::bytes) {
      if (auto text = std::get_if<std::string>(&value)) {
        auto bytes = parse_byte_size(*text);
        if (!bytes) return fail(at, key + ": " + bytes.status().message());
        if (static_cast<double>(*bytes) < spec->min || static_cast<double>(*bytes) > spec->max)
          return fail(at, schema::out_of_range(key, *text, spec->min, spec->max));
        return Status::success();
      }
    }
    auto check = [&](const std::string& setting, auto v) -> Status {
      const double d = static_cast<double>(v);
      if (d >= spec->min && d <= spec->max) return Status::success();  // false for NaN
      return fail(at, schema::out_of_range(setting, schema::format_number(v), spec->min, spec->max));
    };
    if (auto i = std::get_if<std::int64_t>(&value)) return check(key, *i);
    if (auto d = std::get_if<double>(&value)) return check(key, *d);
    auto each = [&](const auto& list) -> Status {
      for (std::size_t n = 0; n < list.size(); ++n) GRAFT_TRY(check(key + "[" + std::to_string(n) + "]", list[n]));
      return Status::success();
    };
    if (auto l = std::get_if<std::vector<std::int64_t>>(&value)) return each(*l);
    if (auto l = std::get_if<std::vector<double>>(&value)) return each(*l);
    return Status::success();
  }

  const PluginChoice& choice_;
  std::span<const ConfigKeySpec> specs_;
  std::string_view what_;
};

}  // namespace

Status check_plugin_config(const PluginChoice& choice, std::span<const ConfigKeySpec> specs, std::string_view what) {
  return Checker(choice, specs, what).run();
}

Config normalized_plugin_config(const PluginChoice& choice, std::span<const ConfigKeySpec> specs) {
  Config out;
  for (const auto& [key, value] : choice.config.values()) {
    ConfigValue v = value;
    const ConfigKeySpec* spec = nullptr;
    for (const auto& s : specs)
      if (s.key && key == s.key) spec = &s;
    if (spec) {
      if (spec->type == ConfigType::real) {
        if (auto i = std::get_if<std::int64_t>(&v)) v = static_cast<double>(*i);
      } else if (spec->type == ConfigType::real_list) {
        if (auto l = std::get_if<std::vector<std::int64_t>>(&v)) v = std::vector<double>(l->begin(), l->end());
        else if (is_empty_list(v)) v = std::vector<double>{};
      } else if (spec->type == ConfigType::integer_list && is_empty_list(v)) {
        v = std::vector<std::int64_t>{};
      } else if (spec->type == ConfigType::string_list && is_empty_list(v)) {
        v = std::vector<std::string>{};
      } else if (spec->type == ConfigType::bytes) {
        // Checked by check_plugin_config; a size the checker did not see stays as it is.
        if (auto text = std::get_if<std::string>(&v))
          if (auto bytes = parse_byte_size(*text)) v = static_cast<std::int64_t>(*bytes);
      }
    }
    out.set(key, std::move(v));
  }
  return out;
}

std::string plugin_label(PluginKind kind, std::string_view name) {
  const char* kind_words = kind == PluginKind::kv_store ? "kv store" : plugin_kind_name(kind);
  return std::string(kind_words) + " '" + std::string(name) + "'";
}

Status check_profile_plugins(const Profile& profile, const PluginKeyLookup& lookup) {
  auto check = [&](PluginKind kind, const PluginChoice& choice) -> Status {
    auto specs = lookup(kind, choice.name);
    if (!specs) {
      // Point at the table that asked for the plugin when there is one.
      if (choice.location.empty()) return specs.status();
      return Status(specs.status().code(), choice.location + ": " + specs.status().message());
    }
    return check_plugin_config(choice, *specs, plugin_label(kind, choice.name));
  };
  GRAFT_TRY(check(PluginKind::backend, profile.backend));
  GRAFT_TRY(check(PluginKind::kv_store, profile.kv));
  for (const auto& d : profile.drafters) GRAFT_TRY(check(PluginKind::drafter, d));
  return Status::success();
}

}  // namespace graft
