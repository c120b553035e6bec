#include "server/tool_format.hpp"

#include <nlohmann/json.hpp>

namespace graft::server {

namespace {

using ojson = nlohmann::ordered_json;

// One call object: a string "name" and its arguments under `args` (an object, or JSON text).
bool read_call(const ojson& call, const char* args, std::vector<ToolCall>& calls) {
  if (!call.is_object() || !call.contains("name") || !call["name"].is_string()) return false;
  ToolCall c;
  c.name = call["name"].get<std::string>();
  if (!call.contains(args)) {
    c.arguments = "{}";
  } else if (call[args].is_object()) {
    c.arguments = call[args].dump();
  } else if (call[args].is_string()) {
    c.arguments = call[args].get<std::string>();
  } else {
    return false;
  }
  calls.push_back(std::move(c));
  return true;
}

// JSON as a string literal (for the forced start's function name).
std::string quoted(std::string_view s) { return ojson(std::string(s)).dump(); }

}  // namespace

const char* ToolFormat::name() const {
  switch (kind) {
    case Kind::hermes: return "hermes";
    case Kind::mistral: return "mistral";
    case Kind::llama3: return "llama3";
  }
  return "?";
}

std::string_view ToolFormat::open() const {
  switch (kind) {
    case Kind::hermes: return "<tool_call>";
    case Kind::mistral: return "[TOOL_CALLS]";
    case Kind::llama3: return "{";
  }
  return {};
}

std::vector<std::string_view> ToolFormat::markers() const {
  switch (kind) {
    case Kind::hermes: return {"<tool_call>", "</tool_call>"};
    case Kind::mistral: return {"[TOOL_CALLS]"};
    case Kind::llama3: return {"<|python_tag|>"};
  }
  return {};
}

std::string_view ToolFormat::close() const { return kind == Kind::hermes ? "</tool_call>" : ""; }

bool ToolFormat::parse(std::string_view body, std::vector<ToolCall>& calls) const {
  const ojson j = ojson::parse(body, nullptr, false);
  if (j.is_discarded()) return false;
  std::vector<ToolCall> got;
  switch (kind) {
    case Kind::hermes:
      if (!read_call(j, "arguments", got)) return false;
      break;
    case Kind::mistral:
      // An array of calls (Mistral's v3 templates), or one call.
      if (j.is_array()) {
        if (j.empty()) return false;
        for (const ojson& c : j)
          if (!read_call(c, "arguments", got)) return false;
      } else if (!read_call(j, "arguments", got)) {
        return false;
      }
      break;
    case Kind::llama3:
      // Llama 3.x templates ask for "parameters"; some fine-tunes write "arguments".
      if (!read_call(j, j.is_object() && j.contains("parameters") ? "parameters" : "arguments", got)) return false;
      break;
  }
  calls.insert(calls.end(), got.begin(), got.end());
  return true;
}

std::string ToolFormat::forced_start(std::string_view function) const {
  std::string name = function.empty() ? "\"" : quoted(function) + ", ";
  switch (kind) {
    case Kind::hermes:
      return "<tool_call>\n{\"name\": " + name + (function.empty() ? "" : "\"arguments\":");
    case Kind::mistral:
      return "[TOOL_CALLS][{\"name\": " + name + (function.empty() ? "" : "\"arguments\":");
    case Kind::llama3:
      return "{\"name\": " + name + (function.empty() ? "" : "\"parameters\":");
  }
  return {};
}

ToolFormat tool_format_of(std::string_view t) {
  ToolFormat f;
  if (t.find("[TOOL_CALLS]") != std::string_view::npos) f.kind = ToolFormat::Kind::mistral;
  else if (t.find("<tool_call>") != std::string_view::npos) f.kind = ToolFormat::Kind::hermes;
  else if (t.find("<|python_tag|>") != std::string_view::npos || t.find("\"parameters\": dictionary") != std::string_view::npos)
    f.kind = ToolFormat::Kind::llama3;
  return f;
}

}  // namespace graft::server
