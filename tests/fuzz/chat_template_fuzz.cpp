// libFuzzer target: the chat template engine on untrusted input, as a template inside a downloaded
// GGUF file is: parse a fuzzed template, then render it over fuzzed messages (roles, contents,
// tool calls, switches) with the evaluation budget a server uses. A render may fail (one error
// line); it must not crash, leak, read out of bounds or run past the budget's time.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <cstring>
#include <nlohmann/json.hpp>
#include <string>
#include <variant>

#include "chat_template/chat_template.hpp"

// An input is a template, a zero byte, then the bytes the messages are made of (so a real template
// file, with "\0" and a few bytes after it, is a seed: tools/fuzz_gguf.sh chat_template_fuzz).
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* zero = static_cast<const std::uint8_t*>(std::memchr(data, 0, size));
  const std::size_t source_size = zero ? static_cast<std::size_t>(zero - data) : size;
  const std::string source(reinterpret_cast<const char*>(data), source_size);
  FuzzedDataProvider in(data + source_size, size - source_size);
  nlohmann::ordered_json messages = nlohmann::ordered_json::array();
  const int n = in.ConsumeIntegralInRange<int>(0, 6);
  static const char* const kRoles[] = {"system", "user", "assistant", "tool", "developer", "x"};
  for (int i = 0; i < n; ++i) {
    nlohmann::ordered_json m = {{"role", kRoles[in.ConsumeIntegralInRange<int>(0, 5)]},
                                {"content", in.ConsumeRandomLengthString(64)}};
    if (in.ConsumeBool())
      m["tool_calls"] = nlohmann::ordered_json::array(
          {{{"type", "function"},
            {"function", {{"name", in.ConsumeRandomLengthString(16)}, {"arguments", {{"a", in.ConsumeIntegral<int>()}}}}}}});
    if (in.ConsumeBool()) m["reasoning_content"] = in.ConsumeRandomLengthString(32);
    messages.push_back(std::move(m));
  }
  nlohmann::ordered_json context = {{"messages", messages},
                                    {"add_generation_prompt", in.ConsumeBool()},
                                    {"enable_thinking", in.ConsumeBool()},
                                    {"bos_token", "<s>"},
                                    {"eos_token", "</s>"}};
  if (in.ConsumeBool())
    context["tools"] = nlohmann::ordered_json::array(
        {{{"type", "function"}, {"function", {{"name", "f"}, {"parameters", {{"type", "object"}}}}}}});
  auto parsed = graft::chat::ChatTemplate::parse(source);
  if (auto* t = std::get_if<graft::chat::ChatTemplate>(&parsed)) {
    graft::chat::RenderOptions options;
    options.now = [] { return std::chrono::system_clock::time_point{}; };
    // Smaller than the server's budget, so a run past it ends in fractions of a second here too.
    options.max_steps = 200'000;
    options.max_bytes = std::size_t{1} << 20;
    (void)t->render(context, options);
  }
  return 0;
}
