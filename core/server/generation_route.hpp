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

class ResponseShape {
 public:
  virtual ~ResponseShape() = default;
  virtual nlohmann::json whole(const GenerationJob& job) const = 0;          // the non-streaming body
  virtual std::vector<nlohmann::json> opening() const { return {}; }         // events before any text
  virtual nlohmann::json piece(const std::string& text) const = 0;           // one text event
  virtual nlohmann::json last(const GenerationJob& job) const = 0;           // the event with the finish reason
  virtual nlohmann::json usage_event(const GenerationJob& job) const = 0;    // stream_options.include_usage
};

// OpenAI's reasons: "stop" (end of sequence or a stop string), "length" (max_tokens or a full
// context; graft_fields' stop_reason says which).
const char* openai_finish_reason(FinishReason r);
nlohmann::json usage(const GenerationJob& job);
// graft's figures for the request: stop_reason, prefill and decode tok/s, tokens_per_round.
nlohmann::json graft_fields(const GenerationJob& job);

// The 400 for a prompt that leaves no room in a sequence's context, or nullopt.
std::optional<ApiError> check_prompt_fits(const ServerContext& ctx, std::size_t prompt_tokens);

// Queues `job` (prompt set) with the fields' options and answers on `res`.
void run_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<GenerationJob> job,
                    const GenerationFields& fields, std::shared_ptr<const ResponseShape> shape);

}  // namespace graft::server
