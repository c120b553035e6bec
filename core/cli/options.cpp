#include "cli/options.hpp"

#include <algorithm>
#include <charconv>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>
#include <type_traits>
#include <utility>

#include "profile/profile_schema.hpp"
#include "profile/suggest.hpp"

namespace graft::cli {

namespace {

// Flags that set one numeric profile key. Type, range and help come from the schema, so a flag
// and its TOML key cannot disagree.
struct KeyFlag {
  const char* names;  // boost form: "ctx,c"
  std::string_view section;
  std::string_view key;
};

constexpr KeyFlag kKeyFlags[] = {
    {"ctx,c", "context", "size"},
    {"n-predict,n", "context", "max_tokens"},
    {"temp", "sampling", "temperature"},
    {"top-k", "sampling", "top_k"},
    {"top-p", "sampling", "top_p"},
    {"min-p", "sampling", "min_p"},
    {"repeat-penalty", "sampling", "repeat_penalty"},
    {"repeat-last-n", "sampling", "repeat_last_n"},
    {"presence-penalty", "sampling", "presence_penalty"},
    {"seed", "sampling", "seed"},
    {"threads,t", "backend", "threads"},
};

std::string long_name(const char* names) {
  std::string s(names);
  return s.substr(0, s.find(','));
}

const schema::KeySpec& spec_of(const KeyFlag& flag) {
  // The table above names only keys that exist; a typo there is a programming error caught by
  // the tests, not a user error.
  return *schema::find_key(*schema::find_section(flag.section), flag.key);
}

std::string flag_help(const schema::KeySpec& spec, std::string_view setting) {
  std::string help(spec.help);
  if (const auto range = schema::range_text(spec.min, spec.max); !range.empty()) help.append(" [").append(range).append("]");
  return help.append("; profile key ").append(setting);
}

Status flag_error(std::string_view flag, const std::string& message) {
  return Status(Errc::invalid_argument, std::string("command line: --").append(flag).append(": ").append(message));
}

Expected<std::string> read_prompt_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status(Errc::io_error, "command line: --prompt-file: cannot read '" + path + "': " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  std::string prompt = text.str();
  // Editors end files with a newline nobody meant as part of the prompt (llama.cpp drops it too).
  if (!prompt.empty() && prompt.back() == '\n') prompt.pop_back();
  if (!prompt.empty() && prompt.back() == '\r') prompt.pop_back();
  return prompt;
}

}  // namespace

void add_profile_options(po::options_description& desc) {
  auto add = desc.add_options();
  add("profile", po::value<std::string>()->value_name("FILE|auto"),
      "TOML profile (default: built-in CPU defaults); auto: backend, KV cache types and context chosen for the "
      "memory there is (docs/memory.md)");
  add("model,m", po::value<std::string>()->value_name("FILE"), "GGUF model file; profile key model.path");
  for (const auto& flag : kKeyFlags) {
    const schema::KeySpec& spec = spec_of(flag);
    const std::string setting = schema::setting_name(*schema::find_section(flag.section), flag.key);
    const std::string help = flag_help(spec, setting);
    if (!spec.auto_word.empty())  // "N" or the word: read as text, checked in apply_overrides
      add(flag.names, po::value<std::string>()->value_name("N|" + std::string(spec.auto_word)), help.c_str());
    else if (std::holds_alternative<schema::Accessor<std::int64_t>>(spec.field))
      add(flag.names, po::value<std::int64_t>()->value_name("N"), help.c_str());
    else
      add(flag.names, po::value<double>()->value_name("X"), help.c_str());
  }
  add("prompt,p", po::value<std::string>()->value_name("TEXT"), "prompt text; profile key generation.prompt");
  add("prompt-file,f", po::value<std::string>()->value_name("FILE"), "read the prompt from FILE (one trailing newline dropped)");
  add("plugin-dir", po::value<std::vector<std::string>>()->value_name("DIR")->composing(),
      "search DIR for plugins first (repeatable)");
  add("draft", po::value<std::string>()->value_name("LIST"),
      "speculate with these drafters, comma-separated (e.g. ngram,mtp; several merge into one tree); a profile "
      "[[drafter]] table of the same name keeps its keys; profile keys speculative.enabled and [[drafter]]");
  add("draft-model", po::value<std::string>()->value_name("FILE"),
      "the model file of the dflash2 drafter (NAME=FILE: of drafter NAME); profile key model in its [[drafter]] "
      "table");
  add("no-draft", "no speculative decoding, whatever the profile says");
  add("cache-type-k", po::value<std::string>()->value_name("TYPE"),
      "-ctk: the K cache's type, f16, f32, q8_0, q4_0 or tq3; picks the quant KV store (profile [kv] store = \"quant\", "
      "type_k)");
  add("cache-type-v", po::value<std::string>()->value_name("TYPE"),
      "-ctv: the V cache's type, as --cache-type-k (profile [kv] type_v)");
  add("spec-policy", po::value<std::string>()->value_name("FILE"),
      "keep what the speculative round policy learnt in FILE across runs (read when it fits, written at the end); "
      "profile key speculative.policy_file");
}

Expected<po::variables_map> parse_options(const Args& args_in, const po::options_description& desc,
                                          const po::positional_options_description& positional) {
  // llama.cpp's -ctk / -ctv (one dash, three letters) as the long options they stand for.
  Args args = args_in;
  constexpr std::pair<const char*, const char*> kLlamaFlags[] = {{"-ctk", "--cache-type-k"},
                                                                 {"-ctv", "--cache-type-v"}};
  for (std::string& a : args)
    for (const auto& [short_form, long_form] : kLlamaFlags)
      if (a == short_form || a.rfind(std::string(short_form) + "=", 0) == 0) a = long_form + a.substr(4);
  try {
    po::variables_map vm;
    po::store(po::command_line_parser(args)
                  .options(desc)
                  .positional(positional)
                  .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
    return vm;
  } catch (const po::unknown_option& e) {
    std::string message = std::string("command line: ") + e.what();
    std::vector<std::string> names;
    for (const auto& option : desc.options())
      if (!option->long_name().empty()) names.push_back(option->long_name());
    std::string typed = e.get_option_name();
    while (!typed.empty() && typed.front() == '-') typed.erase(0, 1);
    if (auto guess = closest_match(typed, names)) message.append("; did you mean '--").append(*guess).append("'?");
    return Status(Errc::invalid_argument, message);
  } catch (const std::exception& e) {  // po::error and its kin: one line each
    return Status(Errc::invalid_argument, std::string("command line: ") + e.what());
  }
}

Status apply_overrides(Profile& profile, const po::variables_map& vm) {
  for (const auto& flag : kKeyFlags) {
    const std::string name = long_name(flag.names);
    if (!vm.count(name)) continue;
    const schema::KeySpec& spec = spec_of(flag);
    const std::string setting = schema::setting_name(*schema::find_section(flag.section), flag.key);
    Status status = std::visit(
        [&](auto accessor) -> Status {
          using T = std::remove_reference_t<decltype(accessor(profile))>;
          if constexpr (std::is_same_v<T, std::int64_t>) {
            if (!spec.auto_word.empty()) {
              const std::string text = vm[name].as<std::string>();
              std::int64_t value = 0;
              if (text != spec.auto_word) {
                const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
                if (ec != std::errc() || end != text.data() + text.size())
                  return flag_error(name, "'" + text + "' is neither an integer nor \"" + std::string(spec.auto_word) + "\"");
                if (auto e = schema::range_error(spec, setting, value)) return flag_error(name, *e);
              }
              accessor(profile) = value;
              return Status::success();
            }
          }
          if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>) {
            const T value = vm[name].as<T>();
            if (auto e = schema::range_error(spec, setting, value)) return flag_error(name, *e);
            accessor(profile) = value;
            return Status::success();
          } else {
            return Status(Errc::internal, "--" + name + " is bound to a non-numeric key " + setting);
          }
        },
        spec.field);
    GRAFT_TRY(status);
    profile.locations[setting] = "command line: --" + name;
  }

  if (vm.count("model")) {
    const auto& model = vm["model"].as<std::string>();
    if (model.empty()) return flag_error("model", "must not be empty");
    profile.model = model;  // relative to the working directory, as any command-line path
    profile.locations["model.path"] = "command line: --model";
  }

  if (vm.count("prompt") && vm.count("prompt-file"))
    return Status(Errc::invalid_argument, "command line: --prompt and --prompt-file both given; use one");
  if (vm.count("prompt")) {
    profile.prompt = vm["prompt"].as<std::string>();
    profile.locations["generation.prompt"] = "command line: --prompt";
  } else if (vm.count("prompt-file")) {
    auto prompt = read_prompt_file(vm["prompt-file"].as<std::string>());
    if (!prompt) return prompt.status();
    profile.prompt = std::move(*prompt);
    profile.locations["generation.prompt"] = "command line: --prompt-file";
  }

  if (vm.count("draft") && vm.count("no-draft"))
    return Status(Errc::invalid_argument, "command line: --draft and --no-draft both given; use one");
  if (vm.count("no-draft")) {
    profile.speculative.enabled = false;
    profile.locations["speculative.enabled"] = "command line: --no-draft";
  } else if (vm.count("draft")) {
    // The named drafters, in order; each keeps the profile's table of that name, if any.
    std::vector<PluginChoice> chosen;
    const std::string list = vm["draft"].as<std::string>();
    for (std::size_t pos = 0; pos <= list.size();) {
      const std::size_t comma = std::min(list.find(',', pos), list.size());
      std::string name = list.substr(pos, comma - pos);
      pos = comma + 1;
      if (name.empty()) return flag_error("draft", "'" + list + "' has an empty drafter name");
      for (const PluginChoice& c : chosen)
        if (c.name == name) return flag_error("draft", "drafter '" + name + "' is named twice");
      auto it = std::find_if(profile.drafters.begin(), profile.drafters.end(),
                             [&](const PluginChoice& c) { return c.name == name; });
      chosen.push_back(it != profile.drafters.end() ? *it : PluginChoice{name, {}, "command line: --draft", {}});
    }
    profile.drafters = std::move(chosen);
    profile.speculative.enabled = true;
    profile.locations["speculative.enabled"] = "command line: --draft";
  }
  if (vm.count("draft-model")) {
    // FILE for dflash2 (the drafter with a model file of its own), NAME=FILE for any other.
    const std::string value = vm["draft-model"].as<std::string>();
    const std::size_t eq = value.find('=');
    const std::string name = eq == std::string::npos ? "dflash2" : value.substr(0, eq);
    const std::string file = eq == std::string::npos ? value : value.substr(eq + 1);
    if (name.empty() || file.empty()) return flag_error("draft-model", "'" + value + "' wants FILE or NAME=FILE");
    auto it = std::find_if(profile.drafters.begin(), profile.drafters.end(),
                           [&](const PluginChoice& c) { return c.name == name; });
    if (it == profile.drafters.end() || vm.count("no-draft"))
      return flag_error("draft-model", "no drafter '" + name + "' to give " + file +
                                           " to; name it in --draft (e.g. --draft ngram," + name + ")");
    it->config.set("model", file);
    it->key_locations["model"] = "command line: --draft-model";
  }

  if (vm.count("spec-policy")) {
    const std::string file = vm["spec-policy"].as<std::string>();
    if (file.empty()) return flag_error("spec-policy", "must not be empty");
    profile.speculative.policy_file = file;
    profile.locations["speculative.policy_file"] = "command line: --spec-policy";
  }

  if (vm.count("cache-type-k") || vm.count("cache-type-v")) {
    const char* flag = vm.count("cache-type-k") ? "cache-type-k" : "cache-type-v";
    // The types are the quant store's keys: the flags pick that store, unless a file named another.
    if (profile.kv.name != "quant") {
      if (auto at = profile.locations.find("kv.store"); at != profile.locations.end())
        return flag_error(flag, "the KV store is '" + profile.kv.name + "' (" + at->second +
                                    "); K/V types of their own need store = \"quant\" there");
      // The side not given keeps the store's type (f16 unless the profile's [kv] type says otherwise).
      const std::string base = profile.kv.config.get_string("type").value_or("f16");
      profile.kv = PluginChoice{"quant", {}, std::string("command line: --") + flag, {}};
      profile.kv.config.set("type_k", base);
      profile.kv.config.set("type_v", base);
      profile.locations["kv.store"] = std::string("command line: --") + flag;
    }
    for (const auto& [name, key] : {std::pair{"cache-type-k", "type_k"}, std::pair{"cache-type-v", "type_v"}}) {
      if (!vm.count(name)) continue;
      const std::string type = vm[name].as<std::string>();
      if (type.empty()) return flag_error(name, "must not be empty");
      profile.kv.config.set(key, type);
      profile.kv.key_locations[key] = std::string("command line: --") + name;
    }
  }

  if (vm.count("plugin-dir")) {
    std::vector<std::filesystem::path> dirs;
    for (const auto& d : vm["plugin-dir"].as<std::vector<std::string>>()) {
      if (d.empty()) return flag_error("plugin-dir", "must not be empty");
      dirs.emplace_back(d);
    }
    dirs.insert(dirs.end(), profile.plugin_dirs.begin(), profile.plugin_dirs.end());
    profile.plugin_dirs = std::move(dirs);
    profile.locations["plugin_dirs"] = "command line: --plugin-dir";
  }
  return Status::success();
}

Expected<Profile> load_profile_with_overrides(const po::variables_map& vm, int* exit_code) {
  // "auto": the built-in profile, its backend, KV cache and context chosen for the memory at load
  // (a profile file named auto: ./auto).
  const bool choose = vm.count("profile") && vm["profile"].as<std::string>() == "auto";
  Expected<Profile> profile =
      vm.count("profile") && !choose ? Profile::load(vm["profile"].as<std::string>()) : Profile::builtin();
  if (profile && choose) profile->auto_choice = true;
  if (!profile) {
    if (exit_code) *exit_code = 1;  // the profile file
    return profile;
  }
  if (Status st = apply_overrides(*profile, vm); !st.ok()) {
    // A flag's value is a usage error, except a file it names that cannot be read (--prompt-file).
    if (exit_code) *exit_code = st.code() == Errc::io_error || st.code() == Errc::not_found ? 1 : 2;
    return st;
  }
  return profile;
}

std::optional<Profile> load_profile_or_report(const po::variables_map& vm, const std::string& prefix, int& exit_code) {
  auto profile = load_profile_with_overrides(vm, &exit_code);
  if (!profile) {
    std::fprintf(stderr, "%s%s\n", prefix.c_str(), profile.status().message().c_str());
    return std::nullopt;
  }
  return std::move(*profile);
}

}  // namespace graft::cli
