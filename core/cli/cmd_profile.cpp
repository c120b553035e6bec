// `graft profile check FILE` and `graft profile show [FILE]`: validate a profile (with any
// command-line overrides) and print a summary, or print the effective profile as TOML.
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "plugin_host/profile_plugins.hpp"
#include "profile/profile_schema.hpp"
#include "profile/profile_writer.hpp"

namespace graft::cli {

namespace {

constexpr const char* kUsage =
    "usage: graft profile check FILE [options]   validate FILE and print a summary\n"
    "       graft profile show [FILE] [options]  print the effective profile as TOML\n"
    "The options override the file's values, as for 'graft run'.\n";

// The keys of [backend], [kv] and [[drafter]] other than the plugin's name belong to the plugin:
// load each named plugin (ABI checked) and judge them against its declared ConfigKeySpec list.
Status check_plugin_keys(const Profile& profile) {
  PluginRegistry registry = registry_for(profile);
  return check_profile_plugins(profile, registry);
}

std::string keys_of(const PluginChoice& choice) {
  std::string out;
  for (const auto& key : choice.config.keys()) out.append(out.empty() ? " (" : ", ").append(key);
  return out.empty() ? out : out + ")";
}

std::size_t plugin_key_count(const Profile& p) {
  std::size_t n = p.backend.config.values().size() + p.kv.config.values().size();
  for (const auto& d : p.drafters) n += d.config.values().size();
  return n;
}

void print_summary(const Profile& p) {
  const auto num = [](auto v) { return schema::format_number(v); };
  std::printf("profile:  %s\n", p.source.empty() ? "built-in defaults" : p.source.string().c_str());
  std::printf("model:    %s\n", p.model.empty() ? "(not set; pass --model)" : p.model.string().c_str());
  std::printf("backend:  %s%s, threads: %s\n", p.backend.name.c_str(), keys_of(p.backend).c_str(),
              p.threads == 0 ? "all cores" : num(p.threads).c_str());
  std::printf("kv:       %s%s\n", p.kv.name.c_str(), keys_of(p.kv).c_str());
  std::string drafters;
  for (const auto& d : p.drafters) drafters.append(drafters.empty() ? "" : ", ").append(d.name).append(keys_of(d));
  std::printf("drafters: %s; speculative %s, max_nodes %s, max_depth %s\n",
              drafters.empty() ? "none" : drafters.c_str(), p.speculative.enabled ? "on" : "off",
              num(p.speculative.max_nodes).c_str(), num(p.speculative.max_depth).c_str());
  const auto& s = p.sampling;
  std::printf("sampling: temperature %s, top_k %s, top_p %s, min_p %s, repeat_penalty %s (last %s), "
              "presence_penalty %s, seed %s\n",
              num(s.temperature).c_str(), num(s.top_k).c_str(), num(s.top_p).c_str(), num(s.min_p).c_str(),
              num(s.repeat_penalty).c_str(), num(s.repeat_last_n).c_str(), num(s.presence_penalty).c_str(),
              s.seed < 0 ? "random" : num(s.seed).c_str());
  std::printf("context:  %s, max_tokens %s\n",
              p.context == 0 ? "auto (the largest that fits in memory)" : (num(p.context) + " tokens").c_str(),
              p.max_tokens < 0 ? "until end of sequence" : num(p.max_tokens).c_str());
  for (const auto& dir : p.plugin_dirs) std::printf("plugins:  %s\n", dir.string().c_str());
  std::printf("plugins:  %zu plugin key(s) checked against the plugins' declarations\n", plugin_key_count(p));
  std::printf("ok\n");
}

}  // namespace

int cmd_profile(const Args& args) {
  if (args.empty()) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  const std::string& sub = args[0];
  if (sub == "--help" || sub == "-h" || sub == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  if (sub != "check" && sub != "show") {
    std::fprintf(stderr, "graft profile: unknown subcommand '%s'; use check or show (graft profile --help)\n",
                 sub.c_str());
    return 2;
  }

  po::options_description desc("options");
  desc.add_options()("help,h", "show this help");
  add_profile_options(desc);
  po::positional_options_description positional;
  positional.add("profile", 1);
  auto vm = parse_options(Args(args.begin() + 1, args.end()), desc, positional);
  if (!vm) {
    std::fprintf(stderr, "graft profile %s: %s\n", sub.c_str(), vm.status().message().c_str());
    return 2;
  }
  if (vm->count("help")) {
    std::fputs(kUsage, stdout);
    std::cout << desc;
    return 0;
  }
  if (sub == "check" && !vm->count("profile")) {
    std::fprintf(stderr, "graft profile check: missing FILE (usage: graft profile check FILE [options])\n");
    return 2;
  }

  int exit_code = 1;
  auto profile = load_profile_or_report(*vm, "", exit_code);
  if (!profile) return exit_code;
  if (Status plugins = check_plugin_keys(*profile); !plugins.ok()) {
    std::fprintf(stderr, "%s\n", plugins.message().c_str());
    return 1;
  }
  if (sub == "show")
    std::fputs(to_toml(*profile).c_str(), stdout);
  else
    print_summary(*profile);
  return 0;
}

}  // namespace graft::cli
