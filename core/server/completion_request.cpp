#include "server/completion_request.hpp"

#include <fmt/format.h>

#include <limits>

namespace graft::server {

namespace {

using nlohmann::json;

std::optional<ApiError> token_ids(const json& a, std::vector<TokenId>& out) {
  for (const json& v : a) {
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > std::numeric_limits<TokenId>::max())
      return bad_request("'prompt' as token ids must hold non-negative integers", "prompt");
    out.push_back(static_cast<TokenId>(v.get<std::int64_t>()));
  }
  return std::nullopt;
}

std::optional<ApiError> prompt(const json& j, CompletionRequest& r) {
  auto it = j.find("prompt");
  if (it == j.end() || it->is_null()) return bad_request("'prompt' is required", "prompt");
  const json& p = *it;
  if (p.is_string()) {
    r.prompt_text = p.get<std::string>();
  } else if (p.is_array() && !p.empty() && p[0].is_number()) {
    r.prompt_is_ids = true;
    if (auto e = token_ids(p, r.prompt_ids)) return e;
  } else if (p.is_array() && p.size() == 1 && p[0].is_string()) {
    r.prompt_text = p[0].get<std::string>();
  } else if (p.is_array() && p.size() == 1 && p[0].is_array()) {
    r.prompt_is_ids = true;
    if (auto e = token_ids(p[0], r.prompt_ids)) return e;
  } else if (p.is_array() && p.size() > 1) {
    return bad_request("several prompts in one request are not supported; send one request per prompt", "prompt");
  } else {
    return bad_request("'prompt' must be a string, an array of token ids, or an array of one of those", "prompt");
  }
  if (r.prompt_is_ids ? r.prompt_ids.empty() : r.prompt_text.empty())
    return bad_request("'prompt' is empty: there is nothing to continue from", "prompt");
  return std::nullopt;
}

}  // namespace

std::variant<CompletionRequest, ApiError> parse_completion_request(const std::string& body,
                                                                   const SamplingSettings& defaults) {
  json j;
  if (auto e = parse_json_object(body, j)) return *e;
  CompletionRequest r;
  if (auto it = j.find("model"); it != j.end() && !it->is_null()) {
    if (!it->is_string()) return bad_request("'model' must be a string", "model");
    r.model = it->get<std::string>();
  }
  if (auto e = prompt(j, r)) return *e;
  if (auto e = parse_generation_fields(j, defaults, {"max_tokens"}, r.fields)) return *e;
  return r;
}

}  // namespace graft::server
