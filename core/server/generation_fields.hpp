// The request fields every generating route shares (OpenAI's names, llama.cpp's extensions):
// max_tokens, sampling, stop, stream. Unknown fields are ignored (clients send optional ones
// freely); known fields graft does not implement are refused by name.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "engine/session.hpp"
#include "server/api_error.hpp"

namespace graft::server {

struct GenerationFields {
  std::optional<std::int64_t> max_tokens;  // absent: the profile's context.max_tokens
  SamplingSettings sampling;               // the server's defaults with the request's fields applied
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
};

// Reads the fields from the request object `j` over the server's sampling defaults. max_tokens_keys:
// the names max_tokens may come under, first found wins (chat also takes max_completion_tokens).
std::optional<ApiError> parse_generation_fields(const nlohmann::json& j, const SamplingSettings& defaults,
                                                std::initializer_list<const char*> max_tokens_keys,
                                                GenerationFields& out);

// logit_bias ({"token id": bias in -100..100}) into s.logit_bias (ids checked against the
// vocabulary by the route).
std::optional<ApiError> parse_logit_bias(const nlohmann::json& j, SamplingSettings& s);

// The body as a JSON object, or the error saying why not.
std::optional<ApiError> parse_json_object(const std::string& body, nlohmann::json& out);

}  // namespace graft::server
