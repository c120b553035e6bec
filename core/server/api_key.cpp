#include "server/api_key.hpp"

#include <fmt/format.h>

#include <fstream>

namespace graft::server {

namespace {

bool same_key(std::string_view a, std::string_view key) {
  unsigned char diff = a.size() == key.size() ? 0 : 1;
  for (std::size_t i = 0; i < key.size(); ++i) diff |= static_cast<unsigned char>(i < a.size() ? a[i] ^ key[i] : 1);
  return diff == 0;
}

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) s.remove_suffix(1);
  return s;
}

}  // namespace

Expected<ApiKey> resolve_api_key(const ApiKeySource& source) {
  if (source.flag && source.file) return Status(Errc::invalid_argument, "--api-key and --api-key-file: give one of them");
  if (source.flag) {
    if (source.flag->empty()) return Status(Errc::invalid_argument, "--api-key: the key is empty");
    return ApiKey{*source.flag, "--api-key (visible to local users in the process list; --api-key-file or " +
                                    std::string(kApiKeyEnv) + " are not)"};
  }
  if (source.file) {
    std::ifstream in(*source.file);
    if (!in) return Status(Errc::io_error, fmt::format("--api-key-file: cannot read {}", *source.file));
    std::string line;
    std::getline(in, line);
    const std::string key(trim(line));
    if (key.empty()) return Status(Errc::invalid_argument, fmt::format("--api-key-file: {} holds no key on its first line", *source.file));
    return ApiKey{key, "--api-key-file " + *source.file};
  }
  if (source.env) {
    if (source.env->empty()) return Status(Errc::invalid_argument, fmt::format("{} is set but empty", kApiKeyEnv));
    return ApiKey{*source.env, kApiKeyEnv};
  }
  return ApiKey{};
}

bool key_matches(std::string_view authorization, std::string_view x_api_key, std::string_view key) {
  const std::string_view auth = trim(authorization);
  if (const auto space = auth.find(' '); space != std::string_view::npos && iequals(auth.substr(0, space), "bearer") &&
                                          same_key(trim(auth.substr(space + 1)), key))
    return true;
  return !x_api_key.empty() && same_key(x_api_key, key);
}

}  // namespace graft::server
