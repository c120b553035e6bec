// What the generating routes share: checking the prompt against the context, queueing the job,
// and answering whole or as server-sent events, in the shape each API wants (ResponseShape).
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "server/generation_fields.hpp"
#include "server/generation_job.hpp"
#include "server/server_context.hpp"

namespace graft::server {

// How one request's answer is written: whole, or as server-sent events (each string one event,
// ready to send). One object per request, used by one thread.
class ResponseShape {
 public:
  virtual ~ResponseShape() = default;
  virtual nlohmann::json whole(const GenerationJob& job) = 0;  // the non-streaming body
  // Events before any text, sent once a sequence has taken the job (its cached prefix known).
  virtual void opening(const GenerationJob& /*job*/, std::vector<std::string>& /*out*/) {}
  virtual void event(const AnswerEvent& e, std::vector<std::string>& out) = 0;
  // The finish reason, usage (always, or with stream_options.include_usage) and the end marker.
  virtual void closing(const GenerationJob& job, bool include_usage, std::vector<std::string>& out) = 0;
  virtual void error(const ApiError& e, std::vector<std::string>& out);  // OpenAI's: the error, then [DONE]
};

// One server-sent event: OpenAI's "data: {json}", or with a name (Anthropic's) "event: NAME".
std::string sse(const nlohmann::json& j, const char* name = nullptr);

// OpenAI's reasons: "stop" (end of sequence or a stop string), "length" (max_tokens or a full
// context; graft_fields' stop_reason says which), "tool_calls" (the answer called tools).
const char* openai_finish_reason(const GenerationJob& job);
nlohmann::json usage(const GenerationJob& job);
// graft's figures for the request: stop_reason, prefill and decode tok/s, tokens_per_round,
// reasoning tokens and why thinking was closed.
nlohmann::json graft_fields(const GenerationJob& job);

// The 400 for a prompt that leaves no room in a sequence's context, or nullopt.
std::optional<ApiError> check_prompt_fits(const ServerContext& ctx, std::size_t prompt_tokens);

// Queues `job` (prompt set) with the fields' options and answers on `res`; `send` writes an
// error body in the route's API shape.
void run_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<GenerationJob> job,
                    const GenerationFields& fields, std::shared_ptr<ResponseShape> shape);

// The 400 for a logit_bias id outside the vocabulary, or nullopt.
std::optional<ApiError> check_logit_bias(const ServerContext& ctx, const SamplingSettings& s);

// Thinking for a chat request: the server's defaults (--reasoning-budget, --thinking-eos) with
// the request's budget (< 0: none given) and switch; nullopt when the vocabulary has no
// <think>/</think> tokens (the error when a budget was asked for then).
std::optional<ApiError> chat_thinking(const ServerContext& ctx, std::int64_t budget, bool enabled, GenerationJob& job,
                                     const char* budget_field);

// The job's answer split by an AnswerParser (thinking, and with `tools` the model's tool calls),
// the tags it reads rendered as text even where the vocabulary holds them as control tokens.
void parse_answer(const ServerContext& ctx, GenerationJob& job, bool tools);

// What a request's tool_choice asks: a call (to `function`, or to any function when empty).
struct ForcedCall {
  std::string function;
};
// Makes the job's answer start with that call's opening in the model's format (after any
// thinking); call after chat_thinking.
void force_call(const ServerContext& ctx, const ForcedCall& call, GenerationJob& job);

}  // namespace graft::server
