#include "server/answer_parser.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace graft::server {

namespace {

constexpr std::string_view kThinkOpen = "<think>", kThinkClose = "</think>", kPythonTag = "<|python_tag|>";

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

AnswerParser::AnswerParser(bool in_reasoning, std::optional<ToolFormat> tools)
    : state_(in_reasoning ? State::reasoning : State::content), tools_(tools) {}

void AnswerParser::emit(AnswerEvent::Kind kind, std::string text, std::vector<AnswerEvent>& out) {
  // Reasoning and content after a tag lose the whitespace that frames them.
  if (block_start_ && (kind == AnswerEvent::Kind::reasoning || after_tag_)) {
    const auto first = std::find_if(text.begin(), text.end(), [](char c) { return !is_space(c); });
    text.erase(text.begin(), first);
  }
  if (text.empty()) return;
  block_start_ = false;
  if (kind == AnswerEvent::Kind::content && text.find_first_not_of(" \n\t\r") != std::string::npos) answered_ = true;
  if (!out.empty() && out.back().kind == kind && kind != AnswerEvent::Kind::tool_call)
    out.back().text += text;
  else
    out.push_back(AnswerEvent{kind, std::move(text), {}, {}});
}

void AnswerParser::tool_call(const std::string& body, std::vector<AnswerEvent>& out) {
  std::vector<ToolCall> calls;
  std::string_view json = body;
  if (json.starts_with(kPythonTag)) json.remove_prefix(kPythonTag.size());  // Llama 3's call marker
  if (!tools_->parse(json, calls)) {  // not calls graft can read: the model's text as it was
    const std::string_view open = tools_->at_start_only() ? "" : tools_->open();
    emit(AnswerEvent::Kind::content, before_tool_ + std::string(open) + body + std::string(tools_->close()), out);
    return;
  }
  for (ToolCall& c : calls) {
    AnswerEvent e;
    e.kind = AnswerEvent::Kind::tool_call;
    e.name = std::move(c.name);
    e.arguments = std::move(c.arguments);
    out.push_back(std::move(e));
  }
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
      const std::string_view close = tools_->close();
      const std::size_t at = close.empty() ? std::string::npos : buf_.find(close);
      if (at == std::string::npos) {  // (a call without a close tag runs to the end: finish())
        const std::size_t hold = close.empty() ? 0 : partial_tag(buf_, {close});
        tool_ += buf_.substr(0, buf_.size() - hold);
        buf_.erase(0, buf_.size() - hold);
        return;
      }
      tool_ += buf_.substr(0, at);
      buf_.erase(0, at + close.size());
      tool_call(tool_, out);
      tool_.clear();
      state_ = State::content;
      block_start_ = true;
      after_tag_ = true;
      continue;
    }
    // Content: the next <think>, or (with tools) a call's start.
    std::size_t at = buf_.find(kThinkOpen);
    std::size_t tag = kThinkOpen.size();
    State next = State::reasoning;
    std::size_t hold = partial_tag(buf_, {kThinkOpen});
    if (tools_ && !tools_->at_start_only()) {
      const std::size_t t = buf_.find(tools_->open());
      if (t < at) at = t, tag = tools_->open().size(), next = State::tool;
      hold = std::max(hold, partial_tag(buf_, {tools_->open()}));
    } else if (tools_ && !answered_) {
      // Llama 3: a call is the whole answer, a JSON object (or after <|python_tag|>): decided at
      // the answer's first character; until then, whitespace and a possible tag start wait.
      const std::size_t first = buf_.find_first_not_of(" \n\t\r");
      if (first == std::string::npos) return;  // all whitespace so far
      const std::string_view rest = std::string_view(buf_).substr(first);
      if (rest.starts_with(kThinkOpen)) {
        // A thinking block first: the answer starts after it.
      } else if (rest.front() == '{') {
        at = first, tag = 0, next = State::tool;  // the brace stays in the body
      } else if (rest.starts_with(kPythonTag)) {
        at = first, tag = 0, next = State::tool;  // the tag too (dropped when the call parses)
      } else if (kPythonTag.starts_with(rest) || kThinkOpen.starts_with(rest)) {
        return;  // a tag may be coming
      } else {
        answered_ = true;  // ordinary answer text: no call follows
      }
    }
    if (at == std::string::npos) {
      // Whitespace that may turn out to come before a tool call waits too.
      if (tools_ && !tools_->at_start_only()) hold += trailing_space(std::string_view(buf_).substr(0, buf_.size() - hold));
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
    case State::tool:
      if (tools_->close().empty()) {  // a call that runs to the end of the answer
        tool_ += buf_;
        buf_.clear();
        std::string body = std::move(tool_);
        body.erase(body.size() - trailing_space(body));
        tool_call(body, out);
        break;
      }
      // Never closed: the model's text as it was.
      emit(AnswerEvent::Kind::content, before_tool_ + std::string(tools_->open()) + tool_ + buf_, out);
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
