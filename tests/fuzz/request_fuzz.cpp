// libFuzzer target: a request body as graft serve reads it, before any model sees it: the JSON
// bounds pass (values and depth counted without building a tree), the parse into an object, the
// generation fields (max_tokens, sampling, stop, stream), logit_bias, and the error body a refusal
// is answered with. A body may be refused (one error); nothing may crash, leak or read out of
// bounds, and a body past the bounds must never reach the tree-building parse.
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "server/generation_fields.hpp"
#include "server/json_bounds.hpp"

using graft::server::ApiError;

namespace {
// Small bounds, so that the fuzzer reaches them with short inputs.
constexpr graft::server::JsonBounds kBounds{.max_values = 512, .max_depth = 16};

void answer(const ApiError& e) {
  const auto error_handler = nlohmann::json::error_handler_t::replace;  // as send_error: bytes may be any
  (void)e.openai_body().dump(-1, ' ', false, error_handler);
  (void)e.anthropic_body().dump(-1, ' ', false, error_handler);
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string body(reinterpret_cast<const char*>(data), size);
  if (auto e = graft::server::check_json_bounds(body, kBounds)) {
    if (e->status != 413) __builtin_trap();  // a refusal by the bounds is always 413
    answer(*e);
    return 0;
  }
  nlohmann::json j;
  if (auto e = graft::server::parse_json_object(body, j)) {
    answer(*e);
    return 0;
  }
  graft::server::GenerationFields fields;
  if (auto e = graft::server::parse_generation_fields(j, graft::SamplingSettings{}, {"max_completion_tokens", "max_tokens"},
                                                      fields)) {
    answer(*e);
    return 0;
  }
  if (auto e = graft::server::parse_logit_bias(j, fields.sampling)) answer(*e);
  return 0;
}
