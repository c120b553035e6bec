#include "server/generation_route.hpp"

#include <fmt/format.h>
#include <httplib.h>

namespace graft::server {

using nlohmann::json;

namespace {

// Why the generation ended, in graft's words.
const char* stop_reason(FinishReason r) {
  switch (r) {
    case FinishReason::eog: return "end_of_sequence";
    case FinishReason::stop: return "stop_string";
    case FinishReason::length: return "max_tokens";
    case FinishReason::context_full: return "context_full";
  }
  return "unknown";
}

std::string sse(const json& j) { return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n"; }

ApiError generation_error(const Status& st) {
  if (st.code() == Errc::unsupported) return ApiError{503, "server_error", st.message(), {}};
  return ApiError{500, "server_error", st.message(), {}};
}

}  // namespace

const char* openai_finish_reason(FinishReason r) {
  return r == FinishReason::eog || r == FinishReason::stop ? "stop" : "length";
}

json usage(const GenerationJob& job) {
  return {{"prompt_tokens", job.stats.prompt_tokens},
          {"completion_tokens", job.stats.generated_tokens},
          {"total_tokens", job.stats.prompt_tokens + job.stats.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}}};
}

json graft_fields(const GenerationJob& job) {
  const double run = job.stats.prompt_tokens - job.cached_tokens;  // a cached prefix took no time
  json g = {{"stop_reason", stop_reason(job.stats.stop)},
            {"prefill_tokens_per_second", job.stats.prefill_seconds > 0 ? run / job.stats.prefill_seconds : 0.0},
            {"decode_tokens_per_second", job.stats.decode_tps()}};
  if (job.tokens_per_round > 0) g["tokens_per_round"] = job.tokens_per_round;
  if (!job.shifted_at.empty()) g["context_shifts"] = job.shifted_at;  // the sequence's length at each
  return g;
}

std::optional<ApiError> check_prompt_fits(const ServerContext& ctx, std::size_t prompt_tokens) {
  // A sequence's whole KV capacity is the request's context; one token must be left to sample
  // the answer's first token into.
  const std::uint32_t capacity = ctx.queue->capacity();
  if (prompt_tokens < capacity) return std::nullopt;
  return bad_request(fmt::format("the prompt is {} tokens, but this server's context per request is {} tokens (the KV "
                                 "capacity of a sequence, context.size / --ctx) and at least one must be left for the "
                                 "answer",
                                 prompt_tokens, capacity),
                     "prompt");
}

void run_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<GenerationJob> job,
                    const GenerationFields& f, std::shared_ptr<const ResponseShape> shape) {
  job->options.max_tokens = f.max_tokens ? *f.max_tokens : ctx.pipeline.profile().max_tokens;
  job->options.sampling = f.sampling;
  job->options.stop = f.stop;
  job->streaming = f.stream;
  ctx.queue->submit(job);
  if (!f.stream) {
    job->wait();
    if (!job->status.ok()) return send_error(res, generation_error(job->status));
    res.set_content(shape->whole(*job).dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }
  const bool include_usage = f.include_usage;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, shape, include_usage](std::size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) {
          if (sink.write(s.data(), s.size())) return true;
          job->cancelled = true;  // the client went away: the worker stops at its next token
          return false;
        };
        for (const json& e : shape->opening())
          if (!write(sse(e))) return false;
        std::deque<std::string> pieces;
        while (job->take(pieces))
          for (const std::string& p : pieces)
            if (!write(sse(shape->piece(p)))) return false;
        if (!job->status.ok()) {
          if (!write(sse(generation_error(job->status).openai_body()))) return false;
        } else {
          if (!write(sse(shape->last(*job)))) return false;
          if (include_usage && !write(sse(shape->usage_event(*job)))) return false;
        }
        if (!write("data: [DONE]\n\n")) return false;
        sink.done();
        return true;
      },
      [job](bool success) {
        if (!success) job->cancelled = true;
      });
}

}  // namespace graft::server
