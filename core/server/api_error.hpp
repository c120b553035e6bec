// An error a request gets back: the HTTP status and the body each API expects
// (OpenAI: {"error": {"message", "type", "param", "code"}}; Anthropic: {"type": "error", "error": {...}}).
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace graft::server {

struct ApiError {
  int status = 400;
  std::string type = "invalid_request_error";  // invalid_request_error, authentication_error, not_found_error, ...
  std::string message;
  std::string param;  // the request field at fault, or empty

  nlohmann::json openai_body() const {
    return {{"error",
             {{"message", message},
              {"type", type},
              {"param", param.empty() ? nlohmann::json(nullptr) : nlohmann::json(param)},
              {"code", nullptr}}}};
  }
  // Anthropic's: {"type": "error", "error": {"type", "message"}}, with its names for 500 and 413.
  nlohmann::json anthropic_body() const {
    const std::string t = type == "server_error" ? "api_error" : status == 413 ? "request_too_large" : type;
    return {{"type", "error"}, {"error", {{"type", t}, {"message", message}}}};
  }
};

inline ApiError bad_request(std::string message, std::string param = {}) {
  return ApiError{400, "invalid_request_error", std::move(message), std::move(param)};
}

}  // namespace graft::server
