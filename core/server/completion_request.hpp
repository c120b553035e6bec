// POST /v1/completions: the request body, checked field by field (the shared fields in
// generation_fields.hpp; several prompts in one request are refused).
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "engine/session.hpp"
#include "server/generation_fields.hpp"

namespace graft::server {

struct CompletionRequest {
  std::string model;                // echoed back; any value is served by the loaded model
  std::string prompt_text;          // a text prompt ...
  std::vector<TokenId> prompt_ids;  // ... or token ids (when prompt_is_ids)
  bool prompt_is_ids = false;
  GenerationFields fields;
};

// Parses `body` over the server's sampling defaults. The error names the field and what it must be.
std::variant<CompletionRequest, ApiError> parse_completion_request(const std::string& body,
                                                                   const SamplingSettings& defaults);

}  // namespace graft::server
