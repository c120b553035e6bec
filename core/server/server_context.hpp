// What the routes share: the pipeline, the options, the queue and the metrics.
#pragma once

#include <atomic>
#include <ctime>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "chat_template/chat_template.hpp"
#include "engine/pipeline.hpp"
#include "server/api_error.hpp"
#include "server/generation_queue.hpp"
#include "server/server_metrics.hpp"
#include "server/server_options.hpp"
#include "server/thinking_control.hpp"
#include "server/tool_format.hpp"

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace graft::server {

struct ServerContext {
  ServerContext(Pipeline& p, const ServerOptions& o) : pipeline(p), options(o) {}
  Pipeline& pipeline;
  ServerOptions options;
  std::string model_name;   // the id /v1/models lists (the model file's name without .gguf)
  std::time_t created = 0;  // when the server started (the model entry's `created`)
  ServerMetrics metrics;
  std::unique_ptr<GenerationQueue> queue;
  std::atomic<std::uint64_t> next_id{1};
  // The chat routes' template: the model file's tokenizer.chat_template, or graft's ChatML default
  // when it has none (chat_template_origin says which); null with the parse error when it does
  // not parse (the chat routes then answer 500 with it).
  std::shared_ptr<const chat::ChatTemplate> chat_template;
  // The vocabulary's thinking tokens (open == -1: none), found once at start-up.
  ThinkingSettings thinking_tokens;
  std::string chat_template_origin, chat_template_error;
  // How the model writes tool calls, read off that template (tool_format.hpp); <think>, </think>
  // and the format's tags that are tokens of the vocabulary (a chat answer renders them as text).
  ToolFormat tool_format;
  std::vector<TokenId> think_tags, tool_tags;

  std::string new_id(const char* prefix) { return prefix + std::to_string(next_id++); }
};

// Sends `error` with its status, as the JSON body of the request's API (Anthropic's for
// /v1/messages, else OpenAI's).
void send_error(httplib::Response& res, const ApiError& error);

// POST /v1/completions (completions_route.cpp).
void handle_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/chat/completions (chat_route.cpp).
void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// POST /v1/messages and /v1/messages/count_tokens: Anthropic's Messages API (messages_route.cpp).
void handle_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
void handle_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res);
// The chat template's `context` (messages, tools, switches) rendered with the model's template and
// tokenized into `out`, checked against the context unless `check_fits` is false (count_tokens
// counts a prompt of any length) (chat_route.cpp).
std::optional<ApiError> chat_prompt(ServerContext& ctx, nlohmann::ordered_json& context, std::vector<TokenId>& out,
                                    bool check_fits = true);
// The template a model file without tokenizer.chat_template gets (ChatML; docs/serve.md).
extern const char* const kDefaultChatTemplate;

}  // namespace graft::server
