// Profile::load / Profile::parse: toml++ reads the file, the schema tables say what each key
// means. toml++ stays inside this file; every error leaves it as one "file:line:column: message"
// line.
#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <type_traits>

#include <toml++/toml.h>

#include "profile/profile.hpp"
#include "profile/profile_schema.hpp"
#include "profile/suggest.hpp"

namespace graft {

namespace {

using schema::KeySpec;
using schema::SectionSpec;

const char* node_type_name(const toml::node& node) {
  switch (node.type()) {
    case toml::node_type::table: return "table";
    case toml::node_type::array: return node.as_array()->is_array_of_tables() ? "array of tables" : "array";
    case toml::node_type::string: return "string";
    case toml::node_type::integer: return "integer";
    case toml::node_type::floating_point: return "float";
    case toml::node_type::boolean: return "boolean";
    case toml::node_type::date: return "date";
    case toml::node_type::time: return "time";
    case toml::node_type::date_time: return "date-time";
    case toml::node_type::none: break;
  }
  return "nothing";
}

// One line, whatever the parser's message looks like.
std::string one_line(std::string text) {
  std::replace(text.begin(), text.end(), '\n', ' ');
  std::replace(text.begin(), text.end(), '\r', ' ');
  return text;
}

std::vector<std::pair<const toml::key*, const toml::node*>> in_file_order(const toml::table& table) {
  // toml::table iterates by name; errors and config keys should follow the file instead.
  std::vector<std::pair<const toml::key*, const toml::node*>> entries;
  for (auto&& [key, node] : table) entries.emplace_back(&key, &node);
  std::stable_sort(entries.begin(), entries.end(), [](const auto& a, const auto& b) {
    const auto& pa = a.first->source().begin;
    const auto& pb = b.first->source().begin;
    return pa.line != pb.line ? pa.line < pb.line : pa.column < pb.column;
  });
  return entries;
}

class Parser {
 public:
  Parser(Profile& profile, std::string file, std::filesystem::path base)
      : p_(profile), file_(std::move(file)), base_(std::move(base)) {}

  Status run(const toml::table& root) {
    for (const auto& [key, node] : in_file_order(root)) {
      const SectionSpec& top = schema::sections().front();
      if (const KeySpec* spec = schema::find_key(top, key->str())) {
        GRAFT_TRY(set_field(*spec, *node, schema::setting_name(top, spec->key), *key));
        continue;
      }
      const SectionSpec* section = schema::find_section(key->str());
      if (!section || section->name.empty()) return unknown_top_level(*key, *node);
      GRAFT_TRY(parse_section(*section, *node));
    }
    return cross_checks();
  }

 private:
  std::string where(const toml::source_region& region) const {
    return file_ + ":" + std::to_string(region.begin.line) + ":" + std::to_string(region.begin.column);
  }
  Status fail(const toml::source_region& at, const std::string& message) const {
    return Status(Errc::invalid_argument, where(at) + ": " + message);
  }

  std::filesystem::path resolve(const std::string& text) const {
    std::filesystem::path path(text);
    if (path.is_absolute() || base_.empty()) return path.lexically_normal();
    return (base_ / path).lexically_normal();
  }

  Status unknown_top_level(const toml::key& key, const toml::node& node) const {
    std::vector<std::string> tables, top_keys, candidates;
    for (const auto& s : schema::sections()) {
      if (s.name.empty()) {
        for (const auto& k : s.keys) top_keys.emplace_back(k.key);
      } else {
        tables.push_back(schema::table_header(s));
      }
      if (!s.name.empty()) candidates.emplace_back(s.name);
    }
    candidates.insert(candidates.end(), top_keys.begin(), top_keys.end());

    const std::string name(key.str());
    std::string message;
    if (node.is_table())
      message = "unknown table [" + name + "]";
    else if (node.is_array_of_tables())
      message = "unknown table [[" + name + "]]";
    else
      message = "unknown top-level key '" + name + "'";

    if (const SectionSpec* home = schema::section_defining(name); home && !home->name.empty()) {
      message += " ('" + name + "' belongs in " + schema::table_header(*home) + ")";
    } else if (auto guess = closest_match(name, candidates)) {
      const SectionSpec* s = schema::find_section(*guess);
      message += "; did you mean " + (s ? schema::table_header(*s) : "'" + *guess + "'") + "?";
    }
    message += message.back() == '?' ? " valid tables: " : "; valid tables: ";
    message += join_names(tables) + "; valid top-level keys: " + join_names(top_keys);
    return fail(key.source(), message);
  }

  Status parse_section(const SectionSpec& section, const toml::node& node) {
    const std::string header = schema::table_header(section);
    if (section.array_of_tables) {
      if (!node.is_array_of_tables())
        return fail(node.source(), std::string(section.name) + ": expected array of tables " + header + ", got " +
                                       (node.is_table() ? "table [" + std::string(section.name) + "]"
                                                        : std::string(node_type_name(node))));
      const toml::array& array = *node.as_array();
      for (std::size_t i = 0; i < array.size(); ++i)
        GRAFT_TRY(parse_table(section, *array[i].as_table(), i));
      return Status::success();
    }
    if (!node.is_table())
      return fail(node.source(), std::string(section.name) + ": expected table " + header + ", got " +
                                     (node.is_array_of_tables() ? "array of tables [[" + std::string(section.name) + "]]"
                                                                : std::string(node_type_name(node))));
    return parse_table(section, *node.as_table(), std::nullopt);
  }

  Status parse_table(const SectionSpec& section, const toml::table& table, std::optional<std::size_t> index) {
    PluginChoice* choice = section.plugin ? &section.plugin(p_) : nullptr;
    const std::string table_name = schema::setting_name(section, "", index);  // "drafter[0]"
    p_.locations[table_name] = where(table.source());
    if (choice) choice->location = where(table.source());

    std::set<std::string_view> seen;
    for (const auto& [key, node] : in_file_order(table)) {
      const std::string setting = schema::setting_name(section, key->str(), index);
      if (const KeySpec* spec = schema::find_key(section, key->str())) {
        seen.insert(spec->key);
        GRAFT_TRY(set_field(*spec, *node, setting, *key));
      } else if (choice && section.name == std::string_view("drafter") && key->str() == "model" && node->is_string()) {
        // A drafter's own model file, like [model] path, is relative to the profile's folder.
        choice->config.set("model", resolve(node->as_string()->get()).string());
        choice->key_locations["model"] = where(key->source());
      } else if (choice) {
        GRAFT_TRY(set_plugin_value(*choice, std::string(key->str()), *node, setting));
        choice->key_locations[std::string(key->str())] = where(key->source());
      } else {
        return unknown_key(section, *key);
      }
    }
    for (const auto& spec : section.keys) {
      if (spec.required && !seen.count(spec.key))
        return fail(table.source(), table_name + ": missing required key '" + std::string(spec.key) + "' (" +
                                        schema::type_name(spec) + ": " + std::string(spec.help) + ")");
    }
    return Status::success();
  }

  Status unknown_key(const SectionSpec& section, const toml::key& key) const {
    std::vector<std::string> valid;
    for (const auto& k : section.keys) valid.emplace_back(k.key);
    const std::string name(key.str());
    std::string message = "unknown key '" + name + "' in " + schema::table_header(section);
    if (const SectionSpec* home = schema::section_defining(name))
      message += " ('" + name + "' belongs in " + (home->name.empty() ? "the top level" : schema::table_header(*home)) + ")";
    else if (auto guess = closest_match(name, valid))
      message += "; did you mean '" + *guess + "'?";
    message += message.back() == '?' ? " valid keys: " : "; valid keys: ";
    message += join_names(valid);
    return fail(key.source(), message);
  }

  Status type_error(const KeySpec& spec, const toml::node& node, const std::string& setting) const {
    return fail(node.source(), setting + ": expected " + schema::type_name(spec) + ", got " + node_type_name(node));
  }

  // Reads the node as the field's C++ type, checks its range and stores it.
  Status set_field(const KeySpec& spec, const toml::node& node, const std::string& setting, const toml::key& key) {
    Status status = std::visit(
        [&](auto accessor) -> Status {
          using T = std::remove_reference_t<decltype(accessor(p_))>;
          if constexpr (std::is_same_v<T, bool>) {
            if (!node.is_boolean()) return type_error(spec, node, setting);
            accessor(p_) = node.as_boolean()->get();
          } else if constexpr (std::is_same_v<T, std::int64_t>) {
            if (!spec.auto_word.empty() && node.is_string() && node.as_string()->get() == spec.auto_word) {
              accessor(p_) = 0;
              return Status::success();
            }
            if (!node.is_integer()) return type_error(spec, node, setting);
            const std::int64_t v = node.as_integer()->get();
            if (auto e = schema::range_error(spec, setting, v)) return fail(node.source(), *e);
            accessor(p_) = v;
          } else if constexpr (std::is_same_v<T, double>) {
            if (!node.is_number()) return type_error(spec, node, setting);  // integers welcome
            if (node.is_integer()) {
              const std::int64_t v = node.as_integer()->get();
              if (auto e = schema::range_error(spec, setting, v)) return fail(node.source(), *e);
              accessor(p_) = static_cast<double>(v);
            } else {
              const double v = node.as_floating_point()->get();
              if (auto e = schema::range_error(spec, setting, v)) return fail(node.source(), *e);
              accessor(p_) = v;
            }
          } else if constexpr (std::is_same_v<T, std::string>) {
            if (!node.is_string()) return type_error(spec, node, setting);
            if (spec.non_empty && node.as_string()->get().empty())
              return fail(node.source(), setting + ": must not be empty");
            accessor(p_) = node.as_string()->get();
          } else if constexpr (std::is_same_v<T, std::filesystem::path>) {
            if (!node.is_string()) return type_error(spec, node, setting);
            if (node.as_string()->get().empty())  // never meant: it would name the profile's folder
              return fail(node.source(), setting + ": must not be empty");
            accessor(p_) = resolve(node.as_string()->get());
          } else {
            static_assert(std::is_same_v<T, std::vector<std::filesystem::path>>);
            if (!node.is_array()) return type_error(spec, node, setting);
            std::vector<std::filesystem::path> paths;
            const toml::array& array = *node.as_array();
            for (std::size_t i = 0; i < array.size(); ++i) {
              const std::string element = setting + "[" + std::to_string(i) + "]";
              if (!array[i].is_string())
                return fail(array[i].source(), element + ": expected string, got " + node_type_name(array[i]));
              if (array[i].as_string()->get().empty()) return fail(array[i].source(), element + ": must not be empty");
              paths.push_back(resolve(array[i].as_string()->get()));
            }
            accessor(p_) = std::move(paths);
          }
          return Status::success();
        },
        spec.field);
    if (status.ok()) p_.locations[setting] = where(key.source());
    return status;
  }

  // Plugin keys keep their TOML shape as a ConfigValue; the plugin's spec judges them later.
  Status set_plugin_value(PluginChoice& choice, const std::string& key, const toml::node& node,
                          const std::string& setting) {
    const char* expected_shape = "plugin settings are booleans, numbers, strings or arrays of numbers or strings";
    if (auto v = node.as_boolean()) {
      choice.config.set(key, v->get());
    } else if (auto i = node.as_integer()) {
      choice.config.set(key, i->get());
    } else if (auto f = node.as_floating_point()) {
      choice.config.set(key, f->get());
    } else if (auto s = node.as_string()) {
      choice.config.set(key, s->get());
    } else if (auto array = node.as_array()) {
      // Homogeneous arrays only: all numbers (any float makes it a list of reals) or all strings.
      // An empty array is stored as an empty string list; check_plugin_config accepts it for
      // any list type.
      const bool numeric = !array->empty() && array->front().is_number();
      std::vector<std::int64_t> ints;
      std::vector<double> reals;
      std::vector<std::string> strings;
      bool any_float = false;
      for (std::size_t i = 0; i < array->size(); ++i) {
        const toml::node& e = (*array)[i];
        const std::string element = setting + "[" + std::to_string(i) + "]";
        if (i == 0 && !e.is_number() && !e.is_string())
          return fail(e.source(), element + ": arrays in plugin settings hold numbers or strings, got " +
                                      node_type_name(e));
        if (numeric != e.is_number() || (!numeric && !e.is_string()))
          return fail(e.source(), element + ": array elements must all have one type: expected " +
                                      (numeric ? "number" : "string") + ", got " + node_type_name(e));
        if (e.is_integer()) {
          ints.push_back(e.as_integer()->get());
          reals.push_back(static_cast<double>(e.as_integer()->get()));
        } else if (e.is_floating_point()) {
          any_float = true;
          reals.push_back(e.as_floating_point()->get());
        } else {
          strings.push_back(e.as_string()->get());
        }
      }
      if (!numeric)
        choice.config.set(key, std::move(strings));
      else if (any_float)
        choice.config.set(key, std::move(reals));
      else
        choice.config.set(key, std::move(ints));
    } else {
      return fail(node.source(), setting + ": " + expected_shape + ", got " + node_type_name(node));
    }
    return Status::success();
  }

  // Rules that span keys, checked once everything is read.
  Status cross_checks() const {
    const auto& spec = p_.speculative;
    if (spec.max_depth > spec.max_nodes)
      return at_setting("speculative.max_depth", "speculative.max_depth = " + std::to_string(spec.max_depth) +
                                                     " exceeds speculative.max_nodes = " +
                                                     std::to_string(spec.max_nodes) + "; a chain needs a node per step");
    if (spec.enabled && p_.drafters.empty())
      return at_setting("speculative.enabled",
                        "speculative.enabled = true but no [[drafter]] table is given; add one "
                        "(e.g. [[drafter]] with name = \"ngram\") or set enabled = false");
    return Status::success();
  }
  Status at_setting(std::string_view setting, const std::string& message) const {
    return Status(Errc::invalid_argument, p_.where(setting) + ": " + message);
  }

  Profile& p_;
  std::string file_;
  std::filesystem::path base_;
};

}  // namespace

Profile Profile::builtin() { return Profile{}; }

std::string Profile::where(std::string_view setting) const {
  if (auto it = locations.find(setting); it != locations.end()) return it->second;
  // A rule spanning keys may name one that kept its default: point at its table instead.
  if (auto dot = setting.find('.'); dot != std::string_view::npos)
    if (auto it = locations.find(setting.substr(0, dot)); it != locations.end()) return it->second;
  return source.empty() ? std::string("built-in profile") : source.string();
}

Expected<Profile> Profile::parse(std::string_view toml_text, const std::filesystem::path& source_name) {
  const std::string file = source_name.string();
  try {
    toml::table root;
    try {
      root = toml::parse(toml_text, std::string_view(file));
    } catch (const toml::parse_error& e) {
      const auto& at = e.source().begin;
      return Status(Errc::invalid_argument, file + ":" + std::to_string(at.line) + ":" + std::to_string(at.column) +
                                                ": " + one_line(std::string(e.description())));
    }
    Profile profile;
    profile.source = source_name;
    Parser parser(profile, file, source_name.parent_path());
    GRAFT_TRY(parser.run(root));
    return profile;
  } catch (const std::exception& e) {  // allocation failure and the like; nothing may escape
    return Status(Errc::internal, file + ": reading the profile failed: " + e.what());
  }
}

Expected<Profile> Profile::load(const std::filesystem::path& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    return Status(Errc::invalid_argument, path.string() + ": is a folder, not a profile file");
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status(Errc::io_error, path.string() + ": cannot read profile: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return Status(Errc::io_error, path.string() + ": cannot read profile: " + std::strerror(errno));
  return parse(text.str(), path);
}

}  // namespace graft
