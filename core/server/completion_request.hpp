// POST /v1/completions: the request body, checked field by field. Unknown fields are ignored (the
// OpenAI clients send optional ones freely); known fields graft does not support (n > 1, echo,
// logprobs, best_of, suffix, a non-empty logit_bias, several prompts) are refused by name.
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/session.hpp"
#include "server/api_error.hpp"

namespace graft::server {

struct CompletionRequest {
  std::string model;                  // echoed back; any value is served by the loaded model
  std::string prompt_text;            // a text prompt ...
  std::vector<TokenId> prompt_ids;    // ... or token ids (when prompt_is_ids)
  bool prompt_is_ids = false;
  std::optional<std::int64_t> max_tokens;  // absent: until the end of sequence or the context is full
  SamplingSettings sampling;          // the server's defaults with the request's fields applied
  std::vector<std::string> stop;
  bool stream = false;
  bool include_usage = false;         // stream_options.include_usage
};

// Parses `body` over the server's sampling defaults. The error names the field and what it must be.
std::variant<CompletionRequest, ApiError> parse_completion_request(const std::string& body,
                                                                   const SamplingSettings& defaults);

}  // namespace graft::server
