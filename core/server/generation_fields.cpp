#include "server/generation_fields.hpp"

#include <fmt/format.h>

#include <limits>

namespace graft::server {

namespace {

using nlohmann::json;


// Reads an optional number field into `out`, within [lo, hi].
std::optional<ApiError> number(const json& j, const char* key, double lo, double hi, double& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number()) return bad_request(fmt::format("'{}' must be a number", key), key);
  const double v = it->get<double>();
  if (!(v >= lo && v <= hi)) return bad_request(fmt::format("'{}' is {}; it must be in {}..{}", key, v, lo, hi), key);
  out = v;
  return std::nullopt;
}

std::optional<ApiError> integer(const json& j, const char* key, std::int64_t lo, std::int64_t hi, std::int64_t& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_number_integer()) return bad_request(fmt::format("'{}' must be an integer", key), key);
  // Unsigned values past int64 (10^20) are out of range, not wrapped.
  if (it->is_number_unsigned() && it->get<std::uint64_t>() > std::uint64_t(std::numeric_limits<std::int64_t>::max()))
    return bad_request(fmt::format("'{}' is too large; it must be in {}..{}", key, lo, hi), key);
  const std::int64_t v = it->get<std::int64_t>();
  if (v < lo || v > hi) return bad_request(fmt::format("'{}' is {}; it must be in {}..{}", key, v, lo, hi), key);
  out = v;
  return std::nullopt;
}

std::optional<ApiError> boolean(const json& j, const char* key, bool& out) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_boolean()) return bad_request(fmt::format("'{}' must be true or false", key), key);
  out = it->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> stop(const json& j, std::vector<std::string>& out) {
  auto it = j.find("stop");
  if (it == j.end() || it->is_null()) return std::nullopt;
  constexpr std::size_t kMaxStops = 16;
  if (it->is_string()) {
    out.push_back(it->get<std::string>());
  } else if (it->is_array() && it->size() <= kMaxStops) {
    for (const json& s : *it) {
      if (!s.is_string()) return bad_request("'stop' must be a string or an array of strings", "stop");
      out.push_back(s.get<std::string>());
    }
  } else {
    return bad_request(fmt::format("'stop' must be a string or an array of at most {} strings", kMaxStops), "stop");
  }
  for (const std::string& s : out)
    if (s.empty()) return bad_request("'stop' holds an empty string", "stop");
  return std::nullopt;
}

// Known OpenAI fields graft does not implement: refused rather than silently ignored.
std::optional<ApiError> unsupported(const json& j) {
  auto is_set = [&](const char* key) {
    auto it = j.find(key);
    return it != j.end() && !it->is_null();
  };
  if (is_set("n") && !(j["n"].is_number_integer() && j["n"].get<std::int64_t>() == 1))
    return bad_request("'n' other than 1 is not supported", "n");
  if (is_set("best_of") && !(j["best_of"].is_number_integer() && j["best_of"].get<std::int64_t>() == 1))
    return bad_request("'best_of' other than 1 is not supported", "best_of");
  if (is_set("echo") && !(j["echo"].is_boolean() && !j["echo"].get<bool>()))
    return bad_request("'echo' is not supported", "echo");
  if (is_set("logprobs")) return bad_request("'logprobs' is not supported", "logprobs");
  if (is_set("suffix")) return bad_request("'suffix' is not supported", "suffix");
  if (is_set("frequency_penalty") && !(j["frequency_penalty"].is_number() && j["frequency_penalty"].get<double>() == 0))
    return bad_request("'frequency_penalty' is not supported (use presence_penalty or repeat_penalty)",
                       "frequency_penalty");
  return std::nullopt;
}

}  // namespace

std::optional<ApiError> parse_logit_bias(const json& j, SamplingSettings& s) {
  auto it = j.find("logit_bias");
  if (it == j.end() || it->is_null()) return std::nullopt;
  if (!it->is_object()) return bad_request("'logit_bias' must be an object of token id -> bias", "logit_bias");
  for (const auto& [key, value] : it->items()) {
    // OpenAI's keys are token ids written as strings.
    std::size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(key, &used);
    } catch (...) {
      used = 0;
    }
    if (used != key.size() || id < 0 || id > std::numeric_limits<std::int32_t>::max())
      return bad_request(fmt::format("'logit_bias' key '{}' is not a token id", key), "logit_bias");
    if (!value.is_number() || !(value.get<double>() >= -100 && value.get<double>() <= 100))
      return bad_request(fmt::format("'logit_bias' value for token {} must be a number in -100..100", key), "logit_bias");
    s.logit_bias.emplace_back(static_cast<std::int32_t>(id), value.get<float>());
  }
  return std::nullopt;
}

std::optional<ApiError> parse_json_object(const std::string& body, json& out) {
  out = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (out.is_discarded()) return bad_request("the request body is not valid JSON");
  if (!out.is_object()) return bad_request("the request body must be a JSON object");
  return std::nullopt;
}

std::optional<ApiError> parse_generation_fields(const json& j, const SamplingSettings& defaults,
                                                std::initializer_list<const char*> max_tokens_keys,
                                                GenerationFields& r) {
  if (auto e = unsupported(j)) return e;
  r.sampling = defaults;
  for (const char* key : max_tokens_keys) {
    if (!j.contains(key) || j[key].is_null()) continue;
    std::int64_t max_tokens = -1;
    // Past the context is allowed: the request then ends when the context is full.
    if (auto e = integer(j, key, 0, std::numeric_limits<std::int64_t>::max(), max_tokens)) return e;
    r.max_tokens = max_tokens;
    break;
  }
  SamplingSettings& s = r.sampling;
  if (auto e = number(j, "temperature", 0, 100, s.temperature)) return e;
  if (auto e = number(j, "top_p", 0, 1, s.top_p)) return e;
  if (auto e = number(j, "min_p", 0, 1, s.min_p)) return e;
  if (auto e = integer(j, "top_k", 0, std::numeric_limits<std::int32_t>::max(), s.top_k)) return e;
  if (auto e = number(j, "presence_penalty", -2, 2, s.presence_penalty)) return e;
  if (auto e = number(j, "repeat_penalty", 0.01, 10, s.repeat_penalty)) return e;
  if (auto e = integer(j, "repeat_last_n", -1, std::numeric_limits<std::int32_t>::max(), s.repeat_last_n)) return e;
  if (auto e = integer(j, "seed", -1, std::numeric_limits<std::int64_t>::max(), s.seed)) return e;
  if (auto e = parse_logit_bias(j, s)) return e;
  if (auto e = stop(j, r.stop)) return e;
  if (auto e = boolean(j, "stream", r.stream)) return e;
  if (auto it = j.find("stream_options"); it != j.end() && !it->is_null()) {
    if (!it->is_object()) return bad_request("'stream_options' must be an object", "stream_options");
    if (auto e = boolean(*it, "include_usage", r.include_usage)) return e;
  }
  return std::nullopt;
}

}  // namespace graft::server
