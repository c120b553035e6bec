#include "chat_template.hpp"

#include <ctime>

#include <fmt/format.h>

#include "ast.hpp"
#include "evaluator.hpp"
#include "parser.hpp"

namespace graft::chat {

struct ChatTemplate::Impl {
  Body body;
};

namespace {

std::string format_error(const TemplateError& e) {
  // Always one line, even for a raise_exception text with newlines in it.
  std::string msg;
  for (char c : e.message) msg += c == '\n' ? std::string("\\n") : c == '\r' ? std::string() : std::string(1, c);
  return fmt::format("chat template line {}, column {}: {}", e.pos.line, e.pos.column, msg);
}

Value make_fn(std::string name, std::function<Value(const CallArgs&)> fn) {
  return Value(std::make_shared<Callable>(Callable{std::move(name), std::move(fn)}));
}

// Functions every template sees: jinja2's namespace/range/dict plus transformers' additions.
void add_globals(std::unordered_map<std::string, Value>& g, const RenderOptions& options) {
  g["namespace"] = make_fn("namespace", [](const CallArgs& a) {
    auto d = std::make_shared<Dict>();
    for (const Value& p : a.positional)
      if (p.is_dict())
        for (const auto& [k, v] : p.as_dict().items()) d->set(k, v);
    for (const auto& [k, v] : a.named) d->set(k, v);
    return Value(std::move(d));
  });
  g["dict"] = g["namespace"];
  g["range"] = make_fn("range", [](const CallArgs& a) {
    std::int64_t start = 0, stop = 0, step = 1;
    auto num = [&](std::size_t i) {
      if (!a.positional[i].is_int()) fail("range() expects integers");
      return a.positional[i].as_int();
    };
    if (a.positional.size() == 1) stop = num(0);
    else if (a.positional.size() >= 2) start = num(0), stop = num(1);
    if (a.positional.size() >= 3) step = num(2);
    if (step == 0) fail("range() step must not be zero");
    List out;
    for (std::int64_t k = start; step > 0 ? k < stop : k > stop; k += step) {
      out.emplace_back(k);
      if (out.size() > 1000000) fail("range() too large");
    }
    return Value(std::move(out));
  });
  g["raise_exception"] = make_fn("raise_exception", [](const CallArgs& a) -> Value {
    throw TemplateError{a.positional.empty() ? std::string() : a.positional[0].to_str(), {}, true};
  });
  auto now = options.now;
  g["strftime_now"] = make_fn("strftime_now", [now](const CallArgs& a) {
    if (a.positional.empty() || !a.positional[0].is_string()) fail("strftime_now() expects a format string");
    std::time_t t = std::chrono::system_clock::to_time_t(now());
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[256];
    std::size_t n = std::strftime(buf, sizeof buf, a.positional[0].as_string().c_str(), &tm);
    return Value(std::string(buf, n));
  });
}

}  // namespace

std::variant<ChatTemplate, std::string> ChatTemplate::parse(std::string_view source) {
  try {
    auto impl = std::make_shared<Impl>();
    impl->body = parse_template(source);
    return ChatTemplate(std::move(impl));
  } catch (const TemplateError& e) {
    return format_error(e);
  } catch (const std::exception& e) {
    return fmt::format("chat template: {}", e.what());
  }
}

RenderResult ChatTemplate::render(const nlohmann::ordered_json& context, const RenderOptions& options) const {
  // First made, last ended: the render's reference cycles are broken once nothing of it is used.
  ContainerArena arena;
  try {
    std::unordered_map<std::string, Value> globals;
    add_globals(globals, options);
    if (!context.is_object()) return RenderResult::failure("chat template: the context must be a JSON object");
    for (const auto& [k, v] : context.items()) globals[k] = Value::from_json(v);
    Evaluator ev(std::move(globals), options.max_steps, options.max_bytes);
    return RenderResult::success(ev.render(impl_->body));
  } catch (const TemplateError& e) {
    // raise_exception's text is the template author's message: keep it recognizable.
    return RenderResult::failure(format_error(e));
  } catch (const std::exception& e) {
    return RenderResult::failure(fmt::format("chat template: {}", e.what()));
  }
}

}  // namespace graft::chat
