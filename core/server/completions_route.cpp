// POST /v1/completions: OpenAI's text completions, whole or streamed as server-sent events.
#include <fmt/format.h>
#include <httplib.h>

#include <ctime>

#include "server/completion_request.hpp"
#include "server/server_context.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::server {

namespace {

using nlohmann::json;

// OpenAI has two reasons: "stop" (end of sequence or a stop string) and "length" (max_tokens, or
// the context is full: graft's own reason is in graft.stop_reason).
const char* openai_finish_reason(FinishReason r) {
  return r == FinishReason::eog || r == FinishReason::stop ? "stop" : "length";
}

json usage(const GenerationJob& job) {
  return {{"prompt_tokens", job.stats.prompt_tokens},
          {"completion_tokens", job.stats.generated_tokens},
          {"total_tokens", job.stats.prompt_tokens + job.stats.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}}};
}

// Why the generation ended, in graft's words: end_of_sequence, stop_string, max_tokens,
// context_full.
const char* stop_reason(FinishReason r) {
  switch (r) {
    case FinishReason::eog: return "end_of_sequence";
    case FinishReason::stop: return "stop_string";
    case FinishReason::length: return "max_tokens";
    case FinishReason::context_full: return "context_full";
  }
  return "unknown";
}

// graft's figures for the request, beside OpenAI's fields.
json graft_fields(const GenerationJob& job) {
  json g = {{"stop_reason", stop_reason(job.stats.stop)},
            {"prefill_tokens_per_second",  // over the tokens actually run (a cached prefix took no time)
             job.stats.prefill_seconds > 0 ? (job.stats.prompt_tokens - job.cached_tokens) / job.stats.prefill_seconds : 0.0},
            {"decode_tokens_per_second", job.stats.decode_tps()}};
  if (job.tokens_per_round > 0) g["tokens_per_round"] = job.tokens_per_round;
  return g;
}

json chunk(const std::string& id, std::time_t created, const std::string& model, const std::string& text,
           const json& finish_reason) {
  return {{"id", id},
          {"object", "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({{{"text", text}, {"index", 0}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}})}};
}

std::string sse(const json& j) {
  return "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

ApiError generation_error(const Status& st) {
  if (st.code() == Errc::unsupported) return ApiError{503, "server_error", st.message(), {}};
  return ApiError{500, "server_error", st.message(), {}};
}

}  // namespace

void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  auto parsed = parse_completion_request(req.body, ctx.pipeline.profile().sampling);
  if (auto* e = std::get_if<ApiError>(&parsed)) return send_error(res, *e);
  CompletionRequest& r = std::get<CompletionRequest>(parsed);
  const Tokenizer& tok = ctx.pipeline.tokenizer();
  auto job = std::make_shared<GenerationJob>();
  if (r.prompt_is_ids) {
    for (TokenId id : r.prompt_ids)
      if (static_cast<std::uint32_t>(id) >= tok.n_vocab())
        return send_error(res, bad_request(fmt::format("'prompt' holds token id {}, outside the vocabulary (0..{})", id,
                                                       tok.n_vocab() - 1),
                                           "prompt"));
    job->prompt = std::move(r.prompt_ids);
  } else {
    TokenizeOptions opt;
    opt.add_special = true;
    opt.parse_special = true;
    auto ids = tok.encode(r.prompt_text, opt);
    if (!ids) return send_error(res, bad_request("'prompt': " + ids.status().message(), "prompt"));
    job->prompt = std::move(*ids);
  }
  // The whole KV capacity of the sequence is the request's context; one token must be left to
  // sample the answer's first token into.
  const std::uint32_t capacity = ctx.queue->capacity();
  if (job->prompt.size() >= capacity)
    return send_error(res, bad_request(fmt::format("the prompt is {} tokens, but this server's context per request is {} "
                                                   "tokens (the KV capacity of its sequence, context.size / --ctx) and "
                                                   "at least one must be left for the completion",
                                                   job->prompt.size(), capacity),
                                       "prompt"));
  job->options.max_tokens = r.max_tokens ? *r.max_tokens : ctx.pipeline.profile().max_tokens;
  job->options.sampling = r.sampling;
  job->options.stop = r.stop;
  const std::string id = ctx.new_id("cmpl-");
  const std::time_t created = std::time(nullptr);
  const std::string model = r.model.empty() ? ctx.model_name : r.model;
  ctx.queue->submit(job);

  if (!r.stream) {
    job->wait();
    if (!job->status.ok()) return send_error(res, generation_error(job->status));
    json body = chunk(id, created, model, job->text, openai_finish_reason(job->stats.stop));
    body["usage"] = usage(*job);
    body["graft"] = graft_fields(*job);
    res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }
  const bool include_usage = r.include_usage;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, id, created, model, include_usage](std::size_t, httplib::DataSink& sink) {
        auto write = [&](const std::string& s) {
          if (sink.write(s.data(), s.size())) return true;
          job->cancelled = true;  // the client went away: the worker stops at its next token
          return false;
        };
        std::deque<std::string> pieces;
        while (job->take(pieces))
          for (const std::string& p : pieces)
            if (!write(sse(chunk(id, created, model, p, nullptr)))) return false;
        if (!job->status.ok()) {
          if (!write(sse(generation_error(job->status).openai_body()))) return false;
        } else {
          json last = chunk(id, created, model, "", openai_finish_reason(job->stats.stop));
          last["graft"] = graft_fields(*job);
          if (!write(sse(last))) return false;
          if (include_usage) {
            json u = chunk(id, created, model, "", nullptr);
            u["choices"] = json::array();
            u["usage"] = usage(*job);
            if (!write(sse(u))) return false;
          }
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
