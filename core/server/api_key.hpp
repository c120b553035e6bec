// The server's API key: where it comes from (a flag shows it to every local user in `ps`, so a file
// or the environment is offered too) and how a request proves it.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "graft/status.hpp"

namespace graft::server {

// The environment variable `graft serve` reads the key from when no flag names one.
inline constexpr const char* kApiKeyEnv = "GRAFT_API_KEY";

struct ApiKeySource {
  std::optional<std::string> flag;  // --api-key KEY
  std::optional<std::string> file;  // --api-key-file FILE: its first line
  std::optional<std::string> env;   // $GRAFT_API_KEY, when set
};

struct ApiKey {
  std::string key;     // empty: no key required
  std::string origin;  // where it came from, for the start-up line ("--api-key-file FILE", ...)
};

// One key from at most one flag (both flags: an error), else the environment; a file that cannot be
// read or holds no key, and an empty flag or variable, are errors, never "no key".
Expected<ApiKey> resolve_api_key(const ApiKeySource& source);

// Whether a request's headers carry `key`: "Authorization: <scheme> KEY" with the scheme "Bearer"
// in any case (RFC 7235: schemes are case-insensitive), or Anthropic's "x-api-key: KEY". The key
// itself is compared exactly, in time that does not depend on where it first differs.
bool key_matches(std::string_view authorization, std::string_view x_api_key, std::string_view key);

}  // namespace graft::server
