#include "profile/profile_writer.hpp"

#include <cstdio>
#include <type_traits>

#include "profile/profile_schema.hpp"

namespace graft {

namespace {

std::string real_text(double v) {
  std::string s = schema::format_number(v);
  // TOML reads "1" as an integer; keep reals reals.
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

std::string path_text(const std::filesystem::path& p) {
  std::error_code ec;
  const auto abs = std::filesystem::absolute(p, ec);
  return toml_quote((ec ? p : abs).generic_string());
}

std::string value_text(const ConfigValue& value) {
  return std::visit(
      [](const auto& v) -> std::string {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) {
          return v ? "true" : "false";
        } else if constexpr (std::is_same_v<T, std::int64_t>) {
          return std::to_string(v);
        } else if constexpr (std::is_same_v<T, double>) {
          return real_text(v);
        } else if constexpr (std::is_same_v<T, std::string>) {
          return toml_quote(v);
        } else {
          std::string out = "[";
          for (std::size_t i = 0; i < v.size(); ++i) {
            if (i) out += ", ";
            if constexpr (std::is_same_v<T, std::vector<std::string>>) out += toml_quote(v[i]);
            else if constexpr (std::is_same_v<T, std::vector<double>>) out += real_text(v[i]);
            else out += std::to_string(v[i]);
          }
          return out + "]";
        }
      },
      value);
}

// One "key = value  # help" line; an unset model path becomes a comment.
std::string key_line(const schema::KeySpec& spec, Profile& p) {
  std::string value = std::visit(
      [&](auto accessor) -> std::string {
        const auto& v = accessor(p);
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, bool>) return v ? "true" : "false";
        else if constexpr (std::is_same_v<T, std::int64_t>)
          return v == 0 && !spec.auto_word.empty() ? toml_quote(std::string(spec.auto_word)) : std::to_string(v);
        else if constexpr (std::is_same_v<T, double>) return real_text(v);
        else if constexpr (std::is_same_v<T, std::string>) return toml_quote(v);
        else if constexpr (std::is_same_v<T, std::filesystem::path>) return v.empty() ? "" : path_text(v);
        else {
          std::string out = "[";
          for (std::size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + path_text(v[i]);
          return out + "]";
        }
      },
      spec.field);
  if (value.empty())
    return std::string("# ").append(spec.key).append(" = (not set)  # ").append(spec.help).append("\n");
  std::string line = std::string(spec.key) + " = " + value;
  std::string comment(spec.help);
  if (const auto range = schema::range_text(spec.min, spec.max); !range.empty()) comment.append("; ").append(range);
  return line + "  # " + comment + "\n";
}

void write_plugin_keys(const PluginChoice& choice, std::string& out) {
  for (const auto& [key, value] : choice.config.values()) out += key + " = " + value_text(value) + "\n";
}

}  // namespace

std::string toml_quote(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string to_toml(const Profile& profile) {
  Profile p = profile;  // accessors hand out mutable references; read from a copy
  std::string out = "# effective profile: ";
  out.append(profile.source.empty() ? std::string("built-in defaults") : profile.source.generic_string()).append("\n");
  for (const auto& section : schema::sections()) {
    if (section.name.empty()) {
      for (const auto& spec : section.keys) out += key_line(spec, p);
      continue;
    }
    if (section.array_of_tables) {
      // [[drafter]] is the only array of tables; its accessors reach the last element, so each
      // element is presented alone.
      for (const auto& element : profile.drafters) {
        Profile one;
        one.drafters = {element};
        out.append("\n").append(schema::table_header(section)).append("\n");
        for (const auto& spec : section.keys) out += key_line(spec, one);
        write_plugin_keys(element, out);
      }
      continue;
    }
    out.append("\n").append(schema::table_header(section)).append("\n");
    for (const auto& spec : section.keys) out += key_line(spec, p);
    if (section.plugin) write_plugin_keys(section.plugin(p), out);
  }
  return out;
}

}  // namespace graft
