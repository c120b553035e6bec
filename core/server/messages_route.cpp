// POST /v1/messages: Anthropic's Messages API over the same chat template and generation as
// /v1/chat/completions. Content blocks map to the template's messages (text, thinking ->
// reasoning_content, tool_use -> tool_calls, tool_result -> a tool message); the answer comes
// back as thinking, text and tool_use blocks, whole or as Anthropic's named stream events.
// POST /v1/messages/count_tokens renders the same prompt and counts it.
#include <fmt/format.h>
#include <httplib.h>

#include "server/generation_route.hpp"

namespace graft::server {

namespace {

using nlohmann::json;
using ojson = nlohmann::ordered_json;

const char* stop_reason(const GenerationJob& job) {
  switch (job.stats.stop) {
    case FinishReason::eog: return job.tool_calls.empty() ? "end_turn" : "tool_use";
    case FinishReason::stop: return "stop_sequence";
    case FinishReason::length: return "max_tokens";
    case FinishReason::context_full: return "model_context_window_exceeded";
  }
  return "end_turn";
}

class MessagesShape final : public ResponseShape {
 public:
  MessagesShape(std::string id, std::string model, std::size_t prompt_tokens, std::vector<std::string> stops)
      : id_(std::move(id)), model_(std::move(model)), prompt_tokens_(prompt_tokens), stops_(std::move(stops)) {}

  json whole(const GenerationJob& job) override {
    json content = json::array();
    if (!job.reasoning.empty()) content.push_back({{"type", "thinking"}, {"thinking", job.reasoning}, {"signature", ""}});
    if (!job.content.empty()) content.push_back({{"type", "text"}, {"text", job.content}});
    for (const AnswerEvent& c : job.tool_calls) content.push_back(tool_use(c));
    json m = message(content, stop_reason(job), stop_sequence(job));
    m["usage"] = usage(job);
    m["graft"] = graft_fields(job);
    return m;
  }
  void opening(const GenerationJob& job, std::vector<std::string>& out) override {
    json m = message(json::array(), nullptr, nullptr);
    // The same split of the prompt as message_delta's final usage (a cached prefix is a cache read).
    m["usage"] = {{"input_tokens", prompt_tokens_ - job.cached_tokens},
                  {"cache_read_input_tokens", job.cached_tokens},
                  {"output_tokens", 0}};
    out.push_back(sse({{"type", "message_start"}, {"message", m}}, "message_start"));
    out.push_back(sse({{"type", "ping"}}, "ping"));
  }
  void event(const AnswerEvent& e, std::vector<std::string>& out) override {
    using K = AnswerEvent::Kind;
    if (e.kind == K::tool_call) {
      close_block(out);
      json block = tool_use(e);
      block["input"] = json::object();  // the input comes as JSON text in the delta
      open_block(K::tool_call, block, out);
      delta({{"type", "input_json_delta"}, {"partial_json", e.arguments}}, out);
      close_block(out);
      return;
    }
    if (!open_ || kind_ != e.kind) {
      close_block(out);
      if (e.kind == K::reasoning)
        open_block(e.kind, {{"type", "thinking"}, {"thinking", ""}}, out);
      else
        open_block(e.kind, {{"type", "text"}, {"text", ""}}, out);
    }
    if (e.kind == K::reasoning)
      delta({{"type", "thinking_delta"}, {"thinking", e.text}}, out);
    else
      delta({{"type", "text_delta"}, {"text", e.text}}, out);
  }
  void closing(const GenerationJob& job, bool, std::vector<std::string>& out) override {
    close_block(out);
    json d = {{"type", "message_delta"},
              {"delta", {{"stop_reason", stop_reason(job)}, {"stop_sequence", stop_sequence(job)}}},
              {"usage", usage(job)}};
    d["graft"] = graft_fields(job);
    out.push_back(sse(d, "message_delta"));
    out.push_back(sse({{"type", "message_stop"}}, "message_stop"));
  }
  void error(const ApiError& e, std::vector<std::string>& out) override {
    out.push_back(sse(e.anthropic_body(), "error"));
  }

 private:
  json message(const json& content, const json& stop, const json& stop_seq) const {
    return {{"id", id_},       {"type", "message"},        {"role", "assistant"},       {"model", model_},
            {"content", content}, {"stop_reason", stop}, {"stop_sequence", stop_seq}};
  }
  // Anthropic counts cache reads apart from input tokens.
  static json usage(const GenerationJob& job) {
    return {{"input_tokens", job.stats.prompt_tokens - job.cached_tokens},
            {"cache_read_input_tokens", job.cached_tokens},
            {"output_tokens", job.stats.generated_tokens}};
  }
  // Which stop sequence ended the answer: known when the request gave one.
  json stop_sequence(const GenerationJob& job) const {
    if (job.stats.stop != FinishReason::stop || stops_.size() != 1) return nullptr;
    return stops_.front();
  }
  json tool_use(const AnswerEvent& c) {
    json input = json::parse(c.arguments, nullptr, false);
    if (!input.is_object()) input = json::object();
    return {{"type", "tool_use"}, {"id", fmt::format("toolu_{}_{}", id_, calls_++)}, {"name", c.name}, {"input", input}};
  }
  void open_block(AnswerEvent::Kind kind, const json& block, std::vector<std::string>& out) {
    open_ = true;
    kind_ = kind;
    out.push_back(sse({{"type", "content_block_start"}, {"index", index_}, {"content_block", block}}, "content_block_start"));
  }
  void delta(const json& d, std::vector<std::string>& out) {
    out.push_back(sse({{"type", "content_block_delta"}, {"index", index_}, {"delta", d}}, "content_block_delta"));
  }
  void close_block(std::vector<std::string>& out) {
    if (!open_) return;
    // Thinking blocks end with a signature; graft signs nothing, so it is empty.
    if (kind_ == AnswerEvent::Kind::reasoning) delta({{"type", "signature_delta"}, {"signature", ""}}, out);
    out.push_back(sse({{"type", "content_block_stop"}, {"index", index_}}, "content_block_stop"));
    open_ = false;
    ++index_;
  }

  std::string id_, model_;
  std::size_t prompt_tokens_ = 0;
  std::vector<std::string> stops_;
  bool open_ = false;
  AnswerEvent::Kind kind_ = AnswerEvent::Kind::content;
  int index_ = 0;
  std::size_t calls_ = 0;
};

// A text field that is a string or an array of text blocks ("system", tool_result content).
std::optional<ApiError> text_of(const ojson& v, const std::string& field, std::string& out) {
  if (v.is_string()) {
    out = v.get<std::string>();
    return std::nullopt;
  }
  if (!v.is_array()) return bad_request("'" + field + "' must be a string or an array of text blocks", field);
  for (const ojson& b : v) {
    if (!b.is_object() || !b.contains("type") || b["type"] != "text" || !b.contains("text") || !b["text"].is_string())
      return bad_request("'" + field + "' must hold only text blocks ({\"type\": \"text\", \"text\": ...})", field);
    out += b["text"].get<std::string>();
  }
  return std::nullopt;
}

// Anthropic's messages as the template's (OpenAI-shaped) messages.
std::optional<ApiError> messages(const ojson& body, ojson& out) {
  out = ojson::array();
  if (body.contains("system") && !body["system"].is_null()) {
    std::string system;
    if (auto e = text_of(body["system"], "system", system)) return e;
    out.push_back({{"role", "system"}, {"content", system}});
  }
  auto it = body.find("messages");
  if (it == body.end() || !it->is_array() || it->empty())
    return bad_request("'messages' must be a non-empty array of messages", "messages");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const ojson& m = (*it)[i];
    const std::string at = fmt::format("messages[{}]", i);
    if (!m.is_object()) return bad_request("'" + at + "' must be an object", at);
    if (!m.contains("role") || !m["role"].is_string() || (m["role"] != "user" && m["role"] != "assistant"))
      return bad_request("'" + at + ".role' must be \"user\" or \"assistant\"", at + ".role");
    const std::string role = m["role"];
    if (!m.contains("content")) return bad_request("'" + at + ".content' is missing", at + ".content");
    const ojson& content = m["content"];
    if (content.is_string()) {
      out.push_back({{"role", role}, {"content", content.get<std::string>()}});
      continue;
    }
    if (!content.is_array())
      return bad_request("'" + at + ".content' must be a string or an array of content blocks", at + ".content");
    std::string text, reasoning;
    ojson calls = ojson::array();
    auto flush_text = [&] {
      if (!text.empty()) out.push_back({{"role", role}, {"content", text}});
      text.clear();
    };
    for (std::size_t k = 0; k < content.size(); ++k) {
      const ojson& b = content[k];
      const std::string bat = fmt::format("{}.content[{}]", at, k);
      if (!b.is_object() || !b.contains("type") || !b["type"].is_string())
        return bad_request("'" + bat + "' must be a content block with a 'type'", bat);
      const std::string type = b["type"];
      if (type == "text") {
        if (!b.contains("text") || !b["text"].is_string()) return bad_request("'" + bat + ".text' must be a string", bat);
        text += b["text"].get<std::string>();
      } else if (type == "thinking" && role == "assistant") {
        if (b.contains("thinking") && b["thinking"].is_string()) reasoning += b["thinking"].get<std::string>();
      } else if (type == "redacted_thinking" && role == "assistant") {
        // Nothing graft can read.
      } else if (type == "tool_use" && role == "assistant") {
        if (!b.contains("id") || !b["id"].is_string() || !b.contains("name") || !b["name"].is_string())
          return bad_request("'" + bat + "' (tool_use) needs a string 'id' and 'name'", bat);
        const ojson input = b.contains("input") ? b["input"] : ojson::object();
        calls.push_back({{"id", b["id"]}, {"type", "function"}, {"function", {{"name", b["name"]}, {"arguments", input}}}});
      } else if (type == "tool_result" && role == "user") {
        if (!b.contains("tool_use_id") || !b["tool_use_id"].is_string())
          return bad_request("'" + bat + "' (tool_result) needs a string 'tool_use_id'", bat);
        std::string result;
        if (b.contains("content") && !b["content"].is_null())
          if (auto e = text_of(b["content"], bat + ".content", result)) return e;
        flush_text();
        out.push_back({{"role", "tool"}, {"tool_call_id", b["tool_use_id"]}, {"content", result}});
      } else {
        return bad_request(fmt::format("'{}' is a '{}' block in a {} message: graft reads text, thinking, tool_use "
                                       "(assistant) and tool_result (user) blocks",
                                       bat, type, role),
                           bat);
      }
    }
    if (role == "assistant") {
      ojson msg = {{"role", "assistant"}, {"content", text}};
      if (!reasoning.empty()) msg["reasoning_content"] = reasoning;
      if (!calls.empty()) msg["tool_calls"] = calls;
      out.push_back(msg);
    } else {
      flush_text();
    }
  }
  return std::nullopt;
}

// Anthropic's tools ({name, description, input_schema}) as the template's function tools.
std::optional<ApiError> tools(const ojson& body, ojson& out) {
  out = ojson::array();
  auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return std::nullopt;
  if (!it->is_array()) return bad_request("'tools' must be an array", "tools");
  for (std::size_t i = 0; i < it->size(); ++i) {
    const ojson& t = (*it)[i];
    const std::string at = fmt::format("tools[{}]", i);
    if (!t.is_object() || !t.contains("name") || !t["name"].is_string())
      return bad_request("'" + at + "' must be an object with a string 'name'", at);
    ojson fn = {{"name", t["name"]}};
    if (t.contains("description")) fn["description"] = t["description"];
    fn["parameters"] = t.contains("input_schema") ? t["input_schema"] : ojson::object();
    out.push_back({{"type", "function"}, {"function", fn}});
  }
  return std::nullopt;
}

// The template context (messages, tools, thinking switch) for a request; `thinking_on` and
// `budget` from its "thinking" object.
std::optional<ApiError> prompt_context(const ojson& body, ojson& context, bool& thinking_on, std::int64_t& budget,
                                       bool& has_tools, std::optional<ForcedCall>& forced) {
  ojson msgs, fns;
  if (auto e = messages(body, msgs)) return e;
  if (auto e = tools(body, fns)) return e;
  // tool_choice: auto, none (the tools are not shown), any (a call to some tool), or tool (to the
  // one named).
  if (auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
      return bad_request("'tool_choice' must be an object with a 'type'", "tool_choice");
    const std::string type = (*it)["type"];
    if (type == "none") {
      fns = ojson::array();
    } else if (type == "any") {
      forced = ForcedCall{};
    } else if (type == "tool") {
      if (!it->contains("name") || !(*it)["name"].is_string())
        return bad_request("'tool_choice' of type 'tool' needs the tool's 'name'", "tool_choice.name");
      forced = ForcedCall{(*it)["name"].get<std::string>()};
      bool offered = false;
      for (const ojson& f : fns) offered = offered || f["function"]["name"] == forced->function;
      if (!offered)
        return bad_request(fmt::format("'tool_choice' names tool '{}', which 'tools' does not offer", forced->function),
                           "tool_choice.name");
    } else if (type != "auto") {
      return bad_request(fmt::format("'tool_choice' type '{}' is not one of auto, any, tool, none", type), "tool_choice");
    }
    if (forced && fns.empty())
      return bad_request("'tool_choice' asks for a tool call but the request offers no tools", "tool_choice");
  }
  context = ojson::object();
  context["messages"] = msgs;
  has_tools = !fns.empty();
  if (has_tools) context["tools"] = fns;
  thinking_on = true;
  budget = -1;
  if (auto it = body.find("thinking"); it != body.end() && !it->is_null()) {
    if (!it->is_object() || !it->contains("type") || !(*it)["type"].is_string())
      return bad_request("'thinking' must be an object with a 'type' (enabled or disabled)", "thinking");
    const std::string type = (*it)["type"];
    if (type == "disabled") {
      thinking_on = false;
    } else if (type == "enabled") {
      if (!it->contains("budget_tokens") || !(*it)["budget_tokens"].is_number_integer() ||
          (*it)["budget_tokens"].get<std::int64_t>() < 0)
        return bad_request("'thinking.budget_tokens' must be an integer >= 0", "thinking.budget_tokens");
      budget = (*it)["budget_tokens"].get<std::int64_t>();
    } else {
      return bad_request(fmt::format("'thinking.type' is '{}'; it must be enabled or disabled", type), "thinking.type");
    }
    context["enable_thinking"] = thinking_on;
  }
  return std::nullopt;
}

}  // namespace

void handle_messages(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json j;
  if (auto e = parse_json_object(req.body, j)) return send_error(res, *e);
  const ojson body = ojson::parse(req.body, nullptr, false);
  if (!j.contains("max_tokens") || !j["max_tokens"].is_number_integer())
    return send_error(res, bad_request("'max_tokens' is required: an integer >= 1", "max_tokens"));
  GenerationFields fields;
  if (auto e = parse_generation_fields(j, ctx.pipeline.profile().sampling, {"max_tokens"}, fields))
    return send_error(res, *e);
  if (*fields.max_tokens < 1) return send_error(res, bad_request("'max_tokens' must be at least 1", "max_tokens"));
  fields.stop.clear();  // Anthropic's are stop_sequences
  if (auto it = j.find("stop_sequences"); it != j.end() && !it->is_null()) {
    if (!it->is_array()) return send_error(res, bad_request("'stop_sequences' must be an array of strings", "stop_sequences"));
    for (const json& s : *it) {
      if (!s.is_string() || s.get<std::string>().empty())
        return send_error(res, bad_request("'stop_sequences' must hold non-empty strings", "stop_sequences"));
      fields.stop.push_back(s.get<std::string>());
    }
  }
  std::string model = ctx.model_name;
  if (j.contains("model") && j["model"].is_string()) model = j["model"].get<std::string>();
  ojson context;
  bool thinking = true, has_tools = false;
  std::int64_t budget = -1;
  std::optional<ForcedCall> forced;
  if (auto e = prompt_context(body, context, thinking, budget, has_tools, forced)) return send_error(res, *e);
  auto job = std::make_shared<GenerationJob>();
  if (auto e = chat_prompt(ctx, context, job->prompt)) return send_error(res, *e);
  if (auto e = chat_thinking(ctx, budget, thinking, *job, "thinking.budget_tokens")) return send_error(res, *e);
  if (forced) force_call(ctx, *forced, *job);
  parse_answer(ctx, *job, has_tools);
  const std::size_t prompt_tokens = job->prompt.size();
  run_generation(ctx, res, job, fields,
                 std::make_shared<MessagesShape>(ctx.new_id("msg_"), model, prompt_tokens, fields.stop));
}

void handle_count_tokens(ServerContext& ctx, const httplib::Request& req, httplib::Response& res) {
  json j;
  if (auto e = parse_json_object(req.body, j)) return send_error(res, *e);
  const ojson body = ojson::parse(req.body, nullptr, false);
  ojson context;
  bool thinking = true, has_tools = false;
  std::int64_t budget = -1;
  std::optional<ForcedCall> forced;
  if (auto e = prompt_context(body, context, thinking, budget, has_tools, forced)) return send_error(res, *e);
  std::vector<TokenId> ids;
  if (auto e = chat_prompt(ctx, context, ids, /*check_fits=*/false)) return send_error(res, *e);
  res.set_content(json{{"input_tokens", ids.size()}}.dump(), "application/json");
}

}  // namespace graft::server
