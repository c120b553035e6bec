// POST /v1/chat/completions: OpenAI's chat completions. The messages are rendered with the
// model's own chat template (tokenizer.chat_template, or graft's documented ChatML default when
// the file has none: docs/serve.md), then generated like a completion, whole or streamed.
#include <fmt/format.h>
#include <httplib.h>

#include <ctime>

#include "server/generation_route.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::server {

// ChatML, as Qwen and many others write it; content is always a string here (chat_route
// normalises text parts and null). Thinking switched off writes an empty thinking block, as
// Qwen3's template does.
const char* const kDefaultChatTemplate =
    "{%- for message in messages %}"
    "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}"
    "{%- if enable_thinking is defined and enable_thinking is false %}{{- '<think>\\n\\n</think>\\n\\n' }}{%- endif %}"
    "{%- endif %}";

namespace {

// The thinking budgets of OpenAI's reasoning_effort "low" and "medium" (docs/serve.md).
constexpr std::int64_t kLowEffortBudget = 1024;
constexpr std::int64_t kMediumEffortBudget = 4096;

using nlohmann::json;
using ojson = nlohmann::ordered_json;

class ChatShape final : public ResponseShape {
 public:
  ChatShape(std::string id, std::string model) : id_(std::move(id)), model_(std::move(model)) {}
  json whole(const GenerationJob& job) override {
    json message = {{"role", "assistant"}};
    // OpenAI's content is null when the answer is only tool calls.
    message["content"] = job.content.empty() && !job.tool_calls.empty() ? json(nullptr) : json(job.content);
    if (!job.reasoning.empty()) message["reasoning_content"] = job.reasoning;
    if (!job.tool_calls.empty()) {
      message["tool_calls"] = json::array();
      for (const AnswerEvent& c : job.tool_calls) message["tool_calls"].push_back(tool_call(c, false));
    }
    json body = head("chat.completion");
    body["choices"] = json::array(
        {{{"index", 0}, {"message", message}, {"logprobs", nullptr}, {"finish_reason", openai_finish_reason(job)}}});
    body["usage"] = usage(job);
    body["graft"] = graft_fields(job);
    return body;
  }
  void opening(const GenerationJob&, std::vector<std::string>& out) override {
    out.push_back(sse(chunk({{"role", "assistant"}, {"content", ""}}, nullptr)));
  }
  void event(const AnswerEvent& e, std::vector<std::string>& out) override {
    json c;
    switch (e.kind) {
      case AnswerEvent::Kind::reasoning: c = chunk({{"reasoning_content", e.text}}, nullptr); break;
      case AnswerEvent::Kind::content: c = chunk({{"content", e.text}}, nullptr); break;
      case AnswerEvent::Kind::tool_call: c = chunk({{"tool_calls", json::array({tool_call(e, true)})}}, nullptr); break;
    }
    // The server's count and clock, for a live speed that does not depend on how the chunks travel
    // (a page counting chunks over their arrival times showed 25000 tok/s beside a real 233).
    c["graft"] = {{"completion_tokens", e.tokens}, {"decode_seconds", e.seconds}};
    out.push_back(sse(c));
  }
  void closing(const GenerationJob& job, bool include_usage, std::vector<std::string>& out) override {
    json e = chunk(json::object(), openai_finish_reason(job));
    e["graft"] = graft_fields(job);
    out.push_back(sse(e));
    if (include_usage) {
      json u = head("chat.completion.chunk");
      u["choices"] = json::array();
      u["usage"] = usage(job);
      out.push_back(sse(u));
    }
    out.push_back("data: [DONE]\n\n");
  }

 private:
  json head(const char* object) const {
    return {{"id", id_}, {"object", object}, {"created", created_}, {"model", model_}};
  }
  json chunk(const json& delta, const json& finish_reason) const {
    json e = head("chat.completion.chunk");
    e["choices"] =
        json::array({{{"index", 0}, {"delta", delta}, {"logprobs", nullptr}, {"finish_reason", finish_reason}}});
    return e;
  }
  // The n-th call of the answer (a stream's delta carries its index).
  json tool_call(const AnswerEvent& c, bool streaming) {
    const std::size_t n = streaming ? streamed_calls_++ : whole_calls_++;
    json call = {{"id", fmt::format("call_{}_{}", id_, n)},
                 {"type", "function"},
                 {"function", {{"name", c.name}, {"arguments", c.arguments}}}};
    if (streaming) call["index"] = n;
    return call;
  }
  std::string id_, model_;
  std::time_t created_ = std::time(nullptr);
  std::size_t streamed_calls_ = 0, whole_calls_ = 0;
};

// A message's content as the template sees it: a string (text parts joined; null -> "").
std::optional<ApiError> content_text(const json& content, std::size_t i, std::string& out) {
  const std::string field = fmt::format("messages[{}].content", i);
  if (content.is_null()) return std::nullopt;
  if (content.is_string()) {
    out = content.get<std::string>();
    return std::nullopt;
  }
  if (!content.is_array()) return bad_request("'" + field + "' must be a string, null or an array of parts", field);
  for (const json& part : content) {
    if (!part.is_object() || !part.contains("type") || !part["type"].is_string())
      return bad_request("'" + field + "' parts must be objects with a 'type'", field);
    if (part["type"] != "text")
      return bad_request(fmt::format("'{}' has a part of type '{}': only text parts are supported",
                                     field, part["type"].get<std::string>()),
                         field);
    if (!part.contains("text") || !part["text"].is_string())
      return bad_request("'" + field + "' text parts need a string 'text'", field);
    out += part["text"].get<std::string>();
  }
  return std::nullopt;
}

// The messages, checked, in the shape templates expect (ordered keys: tojson output depends on them).
std::optional<ApiError> messages(const json& j, const ojson& body, ojson& out) {
  auto it = j.find("messages");
  if (it == j.end() || !it->is_array() || it->empty())
    return bad_request("'messages' must be a non-empty array of messages", "messages");
  out = ojson::array();
  for (std::size_t i = 0; i < it->size(); ++i) {
    const json& m = (*it)[i];
    const std::string at = fmt::format("messages[{}]", i);
    if (!m.is_object()) return bad_request("'" + at + "' must be an object", at);
    if (!m.contains("role") || !m["role"].is_string())
      return bad_request("'" + at + ".role' must be a string", at + ".role");
    const std::string role = m["role"];
    if (role != "system" && role != "developer" && role != "user" && role != "assistant" && role != "tool")
      return bad_request(fmt::format("'{}.role' is '{}'; it must be system, developer, user, assistant or tool", at, role),
                         at + ".role");
    ojson msg = ojson::object();
    msg["role"] = role;
    std::string text;
    if (auto e = content_text(m.contains("content") ? m["content"] : json(), i, text)) return e;
    msg["content"] = text;
    for (const char* key : {"name", "tool_call_id", "reasoning_content"})
      if (m.contains(key) && !m[key].is_null()) {
        if (!m[key].is_string()) return bad_request(fmt::format("'{}.{}' must be a string", at, key), at + "." + key);
        msg[key] = m[key].get<std::string>();
      }
    if (m.contains("tool_calls") && !m["tool_calls"].is_null()) {
      if (!m["tool_calls"].is_array()) return bad_request("'" + at + ".tool_calls' must be an array", at + ".tool_calls");
      ojson calls = ojson::array();
      for (const ojson& c : body["messages"][i]["tool_calls"]) {
        ojson call = c;
        // Templates read function.arguments as an object (HF convention) while OpenAI sends a
        // JSON string: parsed when it is one.
        if (call.contains("function") && call["function"].contains("arguments") &&
            call["function"]["arguments"].is_string()) {
          const ojson args = ojson::parse(call["function"]["arguments"].get<std::string>(), nullptr, false);
          if (!args.is_discarded()) call["function"]["arguments"] = args;
        }
        calls.push_back(call);
      }
      msg["tool_calls"] = calls;
    }
    out.push_back(msg);
  }
  return std::nullopt;
}

// OpenAI's tool_choice: "none" (the tools are not shown), "auto", "required" (a call to some
// function), or {"type": "function", "function": {"name": N}} (a call to N, one of the tools).
std::optional<ApiError> tool_choice(const json& j, bool& tools, std::optional<ForcedCall>& forced) {
  const auto it = j.find("tool_choice");
  if (it == j.end() || it->is_null()) return std::nullopt;
  const char* what = "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}";
  if (it->is_string()) {
    const std::string c = *it;
    if (c == "none") tools = false;
    else if (c == "required") forced = ForcedCall{};
    else if (c != "auto") return bad_request(what, "tool_choice");
  } else if (it->is_object() && it->value("type", json()) == "function" && it->contains("function") &&
             (*it)["function"].is_object() && (*it)["function"].contains("name") && (*it)["function"]["name"].is_string()) {
    forced = ForcedCall{(*it)["function"]["name"].get<std::string>()};
    bool offered = false;
    for (const json& t : tools ? j["tools"] : json::array())
      offered = offered || (t.is_object() && t.contains("function") && t["function"].is_object() &&
                            t["function"].value("name", json()) == forced->function);
    if (!offered)
      return bad_request("'tool_choice' names function '" + forced->function + "', which 'tools' does not offer",
                         "tool_choice");
  } else {
    return bad_request(what, "tool_choice");
  }
  if (forced && !tools) return bad_request("'tool_choice' asks for a tool call but the request offers no tools", "tool_choice");
  return std::nullopt;
}

}  // namespace

void handle_chat_completions(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json j;
  if (auto e = parse_json_object(req.body, j)) return send_error(res, *e);
  // Again in the request's key order: tool schemas and arguments reach the template as sent
  // (tojson output depends on the order).
  const ojson body = ojson::parse(req.body, nullptr, false);
  ojson context = ojson::object();
  ojson msgs;
  if (auto e = messages(j, body, msgs)) return send_error(res, *e);
  context["messages"] = msgs;
  bool tools = j.contains("tools") && !j["tools"].is_null() && !(j["tools"].is_array() && j["tools"].empty());
  if (tools && !j["tools"].is_array()) return send_error(res, bad_request("'tools' must be an array", "tools"));
  std::optional<ForcedCall> forced;
  if (auto e = tool_choice(j, tools, forced)) return send_error(res, *e);
  if (tools) context["tools"] = body["tools"];
  GenerationFields fields;
  if (auto e = parse_generation_fields(j, ctx.pipeline.profile().sampling, {"max_completion_tokens", "max_tokens"}, fields))
    return send_error(res, *e);
  std::int64_t budget = -1;
  if (auto it = j.find("thinking_budget_tokens"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<std::int64_t>() < -1)
      return send_error(res, bad_request("'thinking_budget_tokens' must be an integer >= -1 (-1: no limit)",
                                         "thinking_budget_tokens"));
    budget = it->get<std::int64_t>();
  }
  // OpenAI's reasoning_effort as a thinking budget (docs/serve.md): none and minimal turn thinking
  // off, low and medium cap it at kLowEffortBudget / kMediumEffortBudget tokens, high leaves the
  // server's --reasoning-budget. A request that gives thinking_budget_tokens has that budget only.
  const char* budget_field = "thinking_budget_tokens";
  std::optional<bool> effort_thinking;
  if (auto it = j.find("reasoning_effort"); it != j.end() && !it->is_null()) {
    const std::string effort = it->is_string() ? it->get<std::string>() : "";
    if (effort != "none" && effort != "minimal" && effort != "low" && effort != "medium" && effort != "high")
      return send_error(res, bad_request("'reasoning_effort' must be one of none, minimal, low, medium, high",
                                         "reasoning_effort"));
    const bool budget_given = j.contains("thinking_budget_tokens") && !j["thinking_budget_tokens"].is_null();
    if (!budget_given && (effort == "none" || effort == "minimal")) effort_thinking = false;
    if (!budget_given && (effort == "low" || effort == "medium")) {
      budget = effort == "low" ? kLowEffortBudget : kMediumEffortBudget;
      budget_field = "reasoning_effort";
    }
  }
  if (effort_thinking) context["enable_thinking"] = *effort_thinking;  // chat_template_kwargs may still set it
  std::string model = ctx.model_name;
  if (j.contains("model") && !j["model"].is_null()) {
    if (!j["model"].is_string()) return send_error(res, bad_request("'model' must be a string", "model"));
    model = j["model"].get<std::string>();
  }
  // Template switches the request passes through (enable_thinking, ...): after graft's keys, so a
  // request can set them, but never the messages or tools.
  bool thinking = effort_thinking.value_or(true);
  if (j.contains("chat_template_kwargs") && !j["chat_template_kwargs"].is_null()) {
    if (!j["chat_template_kwargs"].is_object())
      return send_error(res, bad_request("'chat_template_kwargs' must be an object", "chat_template_kwargs"));
    for (const auto& [key, value] : j["chat_template_kwargs"].items())
      if (key != "messages" && key != "tools") context[key] = body["chat_template_kwargs"][key];
    const json& kw = j["chat_template_kwargs"];
    if (kw.contains("enable_thinking") && kw["enable_thinking"].is_boolean()) thinking = kw["enable_thinking"].get<bool>();
  }
  auto job = std::make_shared<GenerationJob>();
  if (auto e = chat_prompt(ctx, context, job->prompt)) return send_error(res, *e);
  if (auto e = chat_thinking(ctx, budget, thinking, *job, budget_field)) return send_error(res, *e);
  if (forced) force_call(ctx, *forced, *job);
  parse_answer(ctx, *job, tools);
  run_generation(ctx, res, job, fields, std::make_shared<ChatShape>(ctx.new_id("chatcmpl-"), model));
}

std::optional<ApiError> chat_prompt(ServerContext& ctx, nlohmann::ordered_json& context, std::vector<TokenId>& out,
                                    bool check_fits) {
  const Tokenizer& tok = ctx.pipeline.tokenizer();
  if (!context.contains("add_generation_prompt")) context["add_generation_prompt"] = true;
  // Left out when the vocabulary has none (templates test `bos_token is defined`).
  if (tok.bos() >= 0 && !context.contains("bos_token")) context["bos_token"] = tok.token_text(tok.bos());
  if (tok.eos() >= 0 && !context.contains("eos_token")) context["eos_token"] = tok.token_text(tok.eos());
  if (!ctx.chat_template)
    return ApiError{500, "server_error", "the model's chat template does not parse: " + ctx.chat_template_error, {}};
  const chat::RenderResult rendered = ctx.chat_template->render(context);
  if (!rendered.ok()) return bad_request("the chat template could not render these messages: " + rendered.error(), "messages");
  TokenizeOptions opt;
  opt.add_special = false;  // as transformers' apply_chat_template: the template writes any BOS itself
  opt.parse_special = true;
  auto ids = tok.encode(rendered.text(), opt);
  if (!ids) return bad_request("the rendered messages: " + ids.status().message(), "messages");
  if (ids->empty()) return bad_request("the rendered messages are empty", "messages");
  if (check_fits)
    if (auto e = check_prompt_fits(ctx, ids->size())) return e;
  out = std::move(*ids);
  return std::nullopt;
}

}  // namespace graft::server
