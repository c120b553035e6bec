#include "server/answer_parser.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace graft::server {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>", kToolOpen = "<tool_call>",
                           kToolClose = "</tool_call>";

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The length of the longest suffix of `s` that begins one of `tags` (a tag that may still come).
std::size_t partial_tag(std::string_view s, std::initializer_list<std::string_view> tags) {
  std::size_t best = 0;
  for (std::string_view tag : tags)
    for (std::size_t n = std::min(s.size(), tag.size() - 1); n > best; --n)
      if (s.substr(s.size() - n) == tag.substr(0, n)) {
        best = n;
        break;
      }
  return best;
}

std::size_t trailing_space(std::string_view s) {
  std::size_t n = 0;
  while (n < s.size() && is_space(s[s.size() - 1 - n])) ++n;
  return n;
}

}  // namespace

AnswerParser::AnswerParser(bool in_reasoning, bool tools)
    : state_(in_reasoning ? State::reasoning : State::content), tools_(tools) {}

void AnswerParser::emit(AnswerEvent::Kind kind, std::string text, std::vector<AnswerEvent>& out) {
  // Reasoning and content after a tag lose the whitespace that frames them.
  if (block_start_ && (kind == AnswerEvent::Kind::reasoning || after_tag_)) {
    const auto first = std::find_if(text.begin(), text.end(), [](char c) { return !is_space(c); });
    text.erase(text.begin(), first);
  }
  if (text.empty()) return;
  block_start_ = false;
  if (!out.empty() && out.back().kind == kind && kind != AnswerEvent::Kind::tool_call)
    out.back().text += text;
  else
    out.push_back(AnswerEvent{kind, std::move(text), {}, {}});
}

void AnswerParser::tool_call(const std::string& body, std::vector<AnswerEvent>& out) {
  using ojson = nlohmann::ordered_json;
  const ojson call = ojson::parse(body, nullptr, false);
  const bool ok = call.is_object() && call.contains("name") && call["name"].is_string() &&
                  (!call.contains("arguments") || call["arguments"].is_object() || call["arguments"].is_string());
  if (!ok) {  // not a call graft can read: the model's text as it was
    emit(AnswerEvent::Kind::content, before_tool_ + std::string(kToolOpen) + body + std::string(kToolClose), out);
    return;
  }
  AnswerEvent e;
  e.kind = AnswerEvent::Kind::tool_call;
  e.name = call["name"].get<std::string>();
  if (!call.contains("arguments"))
    e.arguments = "{}";
  else
    e.arguments = call["arguments"].is_string() ? call["arguments"].get<std::string>() : call["arguments"].dump();
  out.push_back(std::move(e));
}

void AnswerParser::push(std::string_view text, std::vector<AnswerEvent>& out) {
  buf_.append(text);
  for (;;) {
    if (state_ == State::reasoning) {
      const std::size_t at = buf_.find(kThinkClose);
      if (at == std::string::npos) {
        // Release all but a possible "</think>" start and the whitespace before it.
        std::size_t hold = partial_tag(buf_, {kThinkClose});
        hold += trailing_space(std::string_view(buf_).substr(0, buf_.size() - hold));
        emit(AnswerEvent::Kind::reasoning, buf_.substr(0, buf_.size() - hold), out);
        buf_.erase(0, buf_.size() - hold);
        return;
      }
      std::string body = buf_.substr(0, at);
      body.erase(body.size() - trailing_space(body));
      emit(AnswerEvent::Kind::reasoning, std::move(body), out);
      buf_.erase(0, at + kThinkClose.size());
      state_ = State::content;
      block_start_ = true;
      after_tag_ = true;
      continue;
    }
    if (state_ == State::tool) {
      const std::size_t at = buf_.find(kToolClose);
      if (at == std::string::npos) {
        const std::size_t hold = partial_tag(buf_, {kToolClose});
        tool_ += buf_.substr(0, buf_.size() - hold);
        buf_.erase(0, buf_.size() - hold);
        return;
      }
      tool_ += buf_.substr(0, at);
      buf_.erase(0, at + kToolClose.size());
      tool_call(tool_, out);
      tool_.clear();
      state_ = State::content;
      block_start_ = true;
      after_tag_ = true;
      continue;
    }
    // Content: the next <think> or (with tools) <tool_call>.
    std::size_t at = buf_.find(kThinkOpen);
    std::size_t tag = kThinkOpen.size();
    State next = State::reasoning;
    if (tools_) {
      const std::size_t t = buf_.find(kToolOpen);
      if (t < at) at = t, tag = kToolOpen.size(), next = State::tool;
    }
    if (at == std::string::npos) {
      std::size_t hold = tools_ ? partial_tag(buf_, {kThinkOpen, kToolOpen}) : partial_tag(buf_, {kThinkOpen});
      // Whitespace that may turn out to come before a tool call waits too.
      if (tools_) hold += trailing_space(std::string_view(buf_).substr(0, buf_.size() - hold));
      emit(AnswerEvent::Kind::content, buf_.substr(0, buf_.size() - hold), out);
      buf_.erase(0, buf_.size() - hold);
      return;
    }
    std::string before = buf_.substr(0, at);
    if (next == State::tool) {
      before_tool_ = before.substr(before.size() - trailing_space(before));
      before.erase(before.size() - before_tool_.size());
    }
    emit(AnswerEvent::Kind::content, std::move(before), out);
    buf_.erase(0, at + tag);
    state_ = next;
    block_start_ = true;
  }
}

void AnswerParser::finish(std::vector<AnswerEvent>& out) {
  switch (state_) {
    case State::reasoning: {
      std::string rest = std::move(buf_);
      rest.erase(rest.size() - trailing_space(rest));
      emit(AnswerEvent::Kind::reasoning, std::move(rest), out);
      break;
    }
    case State::tool:  // never closed: the model's text as it was
      emit(AnswerEvent::Kind::content, before_tool_ + std::string(kToolOpen) + tool_ + buf_, out);
      break;
    case State::content: {
      std::string rest = std::move(buf_);
      if (after_tag_) rest.erase(rest.size() - trailing_space(rest));
      emit(AnswerEvent::Kind::content, std::move(rest), out);
      break;
    }
  }
  buf_.clear();
  tool_.clear();
}

}  // namespace graft::server
