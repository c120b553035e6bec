#include "server/generation_route.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include "server/client_connection.hpp"

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

ApiError generation_error(const Status& st) {
  if (st.code() == Errc::unsupported) return ApiError{503, "server_error", st.message(), {}};
  return ApiError{500, "server_error", st.message(), {}};
}

}  // namespace

std::string sse(const json& j, const char* name) {
  std::string out = name ? fmt::format("event: {}\n", name) : std::string();
  return out + "data: " + j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n\n";
}

void ResponseShape::error(const ApiError& e, std::vector<std::string>& out) {
  out.push_back(sse(e.openai_body()));
  out.push_back("data: [DONE]\n\n");
}

const char* openai_finish_reason(const GenerationJob& job) {
  const FinishReason r = job.stats.stop;
  if (r != FinishReason::eog && r != FinishReason::stop) return "length";
  return job.tool_calls.empty() ? "stop" : "tool_calls";
}

json usage(const GenerationJob& job) {
  return {{"prompt_tokens", job.stats.prompt_tokens},
          {"completion_tokens", job.stats.generated_tokens},
          {"total_tokens", job.stats.prompt_tokens + job.stats.generated_tokens},
          {"prompt_tokens_details", {{"cached_tokens", job.cached_tokens}}},
          {"completion_tokens_details", {{"reasoning_tokens", job.reasoning_tokens}}}};
}

json graft_fields(const GenerationJob& job) {
  const double run = job.stats.prompt_tokens - job.cached_tokens;  // a cached prefix took no time
  json g = {{"stop_reason", stop_reason(job.stats.stop)},
            {"prefill_tokens_per_second", job.stats.prefill_seconds > 0 ? run / job.stats.prefill_seconds : 0.0},
            {"decode_tokens_per_second", job.stats.decode_tps()}};
  if (job.tokens_per_round > 0) g["tokens_per_round"] = job.tokens_per_round;
  if (!job.shifted_at.empty()) g["context_shifts"] = job.shifted_at;  // the sequence's length at each
  if (job.thinking) {
    g["reasoning_tokens"] = job.reasoning_tokens;
    // "budget" or "end_of_sequence": graft closed the thinking and the model answered after it.
    if (job.thinking_closed != ThinkingControl::Closed::no) g["thinking_forced_closed"] = closed_name(job.thinking_closed);
  }
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

std::optional<ApiError> check_logit_bias(const ServerContext& ctx, const SamplingSettings& s) {
  const std::size_t n_vocab = ctx.pipeline.tokenizer().n_vocab();
  for (const auto& [id, bias] : s.logit_bias)
    if (id < 0 || static_cast<std::size_t>(id) >= n_vocab)
      return bad_request(fmt::format("'logit_bias' names token {}, outside the vocabulary (0..{})", id, n_vocab - 1),
                         "logit_bias");
  return std::nullopt;
}

std::optional<ApiError> chat_thinking(const ServerContext& ctx, std::int64_t budget, bool enabled, GenerationJob& job,
                                     const char* budget_field) {
  ThinkingSettings t = ctx.thinking_tokens;
  if (t.open < 0) {
    if (budget >= 0)
      return bad_request("this model's vocabulary has no <think> and </think> tokens: a thinking budget cannot apply",
                         budget_field);
    return std::nullopt;
  }
  t.budget = budget >= 0 ? budget : ctx.options.reasoning_budget;
  // Thinking off: the template was told (enable_thinking=false); a model that opens a thinking
  // block anyway has it closed at once.
  if (!enabled) t.budget = 0;
  t.answer_after_eos = ctx.options.answer_after_eos_in_thinking;
  job.thinking = std::move(t);
  return std::nullopt;
}

void parse_answer(const ServerContext& ctx, GenerationJob& job, bool tools) {
  // The tags the parser reads, found once at start-up.
  job.shown_tokens = ctx.think_tags;
  if (tools) job.shown_tokens.insert(job.shown_tokens.end(), ctx.tool_tags.begin(), ctx.tool_tags.end());
  job.parser.emplace(job.thinking && opens_thinking(job.prompt, *job.thinking),
                     tools ? std::optional(ctx.tool_format) : std::nullopt);
}

void force_call(const ServerContext& ctx, const ForcedCall& call, GenerationJob& job) {
  if (!job.thinking) job.thinking = ThinkingSettings{};  // a vocabulary without thinking tokens: the start only
  TokenizeOptions opt;
  opt.parse_special = true;  // <tool_call>, [TOOL_CALLS] are the vocabulary's own tokens
  auto ids = ctx.pipeline.tokenizer().encode(ctx.tool_format.forced_start(call.function), opt);
  if (ids) job.thinking->answer_start = std::move(*ids);
}

void run_generation(ServerContext& ctx, httplib::Response& res, std::shared_ptr<GenerationJob> job,
                    const GenerationFields& f, std::shared_ptr<ResponseShape> shape) {
  if (auto e = check_logit_bias(ctx, f.sampling)) return send_error(res, *e);
  job->options.max_tokens = f.max_tokens ? *f.max_tokens : ctx.pipeline.profile().max_tokens;
  job->options.sampling = f.sampling;
  job->options.stop = f.stop;
  job->streaming = f.stream;
  ctx.queue->submit(job);
  if (!f.stream) {
    wait_watching_client(*job);  // cancels the job if its client goes away (client_connection.hpp)
    if (!job->status.ok()) return send_error(res, generation_error(job->status));
    res.set_content(shape->whole(*job).dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
    return;
  }
  const bool include_usage = f.include_usage;
  res.set_header("Cache-Control", "no-cache");
  res.set_chunked_content_provider(
      "text/event-stream",
      [job, shape, include_usage](std::size_t, httplib::DataSink& sink) {
        std::vector<std::string> out;
        auto flush = [&] {
          for (const std::string& s : out)
            if (!sink.write(s.data(), s.size())) {
              job->cancelled = true;  // the client went away: the worker stops at its next token
              return false;
            }
          out.clear();
          return true;
        };
        job->wait_started();
        shape->opening(*job, out);
        if (!flush()) return false;
        std::deque<AnswerEvent> events;
        while (job->take(events)) {
          for (const AnswerEvent& e : events) shape->event(e, out);
          if (!flush()) return false;
        }
        if (!job->status.ok())
          shape->error(generation_error(job->status), out);
        else
          shape->closing(*job, include_usage, out);
        if (!flush()) return false;
        sink.done();
        return true;
      },
      [job](bool success) {
        if (!success) job->cancelled = true;
      });
}

}  // namespace graft::server
