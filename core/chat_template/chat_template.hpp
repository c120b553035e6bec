#pragma once
// Renders Hugging Face chat templates (`tokenizer.chat_template` in GGUF files): a jinja2 subset
// with transformers' settings (trim_blocks, lstrip_blocks, tojson without HTML escaping,
// raise_exception, strftime_now). See docs/chat_templates.md for what is covered.
//
// No function here throws: errors come back as one line,
// "chat template line L, column C: what is wrong".
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <variant>

#include <nlohmann/json.hpp>

namespace graft::chat {

// Text on success, or the error line.
class RenderResult {
 public:
  static RenderResult success(std::string text) { return RenderResult(true, std::move(text)); }
  static RenderResult failure(std::string error) { return RenderResult(false, std::move(error)); }
  bool ok() const { return ok_; }
  const std::string& text() const { return ok_ ? value_ : empty_; }
  const std::string& error() const { return ok_ ? empty_ : value_; }

 private:
  RenderResult(bool ok, std::string v) : ok_(ok), value_(std::move(v)) {}
  bool ok_;
  std::string value_;
  inline static const std::string empty_;
};

struct RenderOptions {
  // Clock behind strftime_now(); tests inject a fixed one. Formats in local time, as transformers.
  std::function<std::chrono::system_clock::time_point()> now = [] { return std::chrono::system_clock::now(); };
  // A template comes inside a downloaded model file: what one render may cost is bounded. Steps
  // are statements run, expressions evaluated and loop iterations (a long chat with tools takes
  // well under 1M; 5M of the costliest kind, loop iterations, take a few seconds); bytes bound the
  // output and any string or list a render builds on the way.
  std::uint64_t max_steps = 5'000'000;
  std::size_t max_bytes = std::size_t{64} << 20;
};

class ChatTemplate {
 public:
  // Parses once; a ChatTemplate is immutable and can be rendered concurrently.
  static std::variant<ChatTemplate, std::string> parse(std::string_view source);

  // context: {"messages": [...], "tools": [...]?, "add_generation_prompt": bool, "bos_token": ...,
  // "eos_token": ..., "enable_thinking": bool?, ...}. ordered_json keeps the key order of tool
  // schemas and messages, which tojson output depends on.
  RenderResult render(const nlohmann::ordered_json& context, const RenderOptions& options = {}) const;

 private:
  struct Impl;
  explicit ChatTemplate(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

}  // namespace graft::chat
