#include "plugin_host/plugin_registry.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <boost/dll/runtime_symbol_info.hpp>
#include <cstdlib>
#include <map>
#include <set>
#include <sstream>

namespace graft {

namespace fs = std::filesystem;

PluginRegistry::PluginRegistry(std::vector<fs::path> search_dirs) {
  std::set<fs::path> seen;
  for (auto& d : search_dirs) {
    std::error_code ec;
    fs::path canon = fs::weakly_canonical(d, ec);
    if (ec) canon = d;
    if (seen.insert(canon).second) dirs_.push_back(canon);
  }
}

std::vector<fs::path> PluginRegistry::default_search_dirs(const std::vector<fs::path>& profile_dirs) {
  std::vector<fs::path> dirs(profile_dirs.begin(), profile_dirs.end());
  if (const char* env = std::getenv("GRAFT_PLUGIN_PATH")) {
    std::stringstream ss(env);
    std::string item;
    while (std::getline(ss, item, ':'))
      if (!item.empty()) dirs.emplace_back(item);
  }
  boost::dll::fs::error_code ec;
  fs::path exe = boost::dll::program_location(ec);
  if (!ec) dirs.push_back(exe.parent_path().parent_path() / GRAFT_PLUGIN_REL_DIR);
  dirs.emplace_back(GRAFT_INSTALL_PLUGIN_DIR);
  return dirs;
}

Expected<std::shared_ptr<PluginLibrary>> PluginRegistry::find(PluginKind kind, std::string_view name) {
  for (auto& lib : loaded_)
    if (lib->kind() == kind && lib->name() == name) return lib;
  const std::string file = plugin_file_name(kind, name);
  for (const auto& dir : dirs_) {
    std::error_code ec;
    fs::path candidate = dir / file;
    if (!fs::exists(candidate, ec)) continue;
    auto lib = PluginLibrary::load(candidate);
    if (!lib) return std::move(lib).status();
    loaded_.push_back(*lib);
    return lib;
  }
  std::string searched;
  for (const auto& d : dirs_) searched += (searched.empty() ? "" : ", ") + d.string();
  return Status(Errc::not_found, fmt::format("{} plugin '{}' not found: no {} in {} (add a folder with "
                                             "plugin_dirs in the profile, --plugin-dir or GRAFT_PLUGIN_PATH)",
                                             plugin_kind_name(kind), name, file,
                                             searched.empty() ? "(no folders)" : searched));
}

std::vector<PluginScanEntry> PluginRegistry::scan(std::optional<PluginKind> only) {
  const std::string prefix = only ? fmt::format("libgraft_{}_", plugin_kind_name(*only)) : "libgraft_";
  std::vector<PluginScanEntry> out;
  std::map<std::string, fs::path> first_by_name;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) continue;
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
      const std::string fname = e.path().filename().string();
      if (fname.rfind(prefix, 0) == 0 && e.path().extension() == ".so") files.push_back(e.path());
    }
    std::sort(files.begin(), files.end());
    for (auto& f : files) {
      PluginScanEntry entry;
      entry.file = f;
      auto [it, inserted] = first_by_name.emplace(f.filename().string(), f);
      if (!inserted) {
        entry.shadowed_by = it->second;
      } else if (auto lib = PluginLibrary::load(f)) {
        entry.library = *lib;
      } else {
        entry.error = lib.status();
      }
      out.push_back(std::move(entry));
    }
  }
  return out;
}

}  // namespace graft
