// One request's generation, shared by the HTTP thread that waits on it and the worker that runs
// it: the worker appends text pieces as tokens come (split into reasoning, answer text and tool
// calls for the chat routes) and marks it finished; the HTTP side takes the events (streaming) or
// waits for the end, and sets `cancelled` when its client has gone.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "engine/session.hpp"
#include "server/answer_parser.hpp"
#include "server/thinking_control.hpp"

namespace graft::server {

struct GenerationJob {
  // Set by the HTTP side before submitting.
  std::vector<TokenId> prompt;
  GenerationOptions options;
  // Chat routes: thinking under control (budget, forced close; null: none) and the text split into
  // reasoning, content and tool calls (null: all of it is content).
  std::optional<ThinkingSettings> thinking;
  std::optional<AnswerParser> parser;
  // Special tokens its text renders all the same: the tags the parser reads (chat routes).
  std::vector<TokenId> shown_tokens;
  std::atomic<bool> cancelled{false};
  // Whether a reader takes pieces as they come (a stream). Nobody is woken per token (on 2 cores a
  // wake per token took a quarter of the decode speed): a stream's reader looks every
  // kStreamPoll, a whole answer's waiter is woken once, at the end.
  bool streaming = false;
  static constexpr std::chrono::milliseconds kStreamPoll{2};

  // Written by the worker under `m`.
  std::mutex m;
  std::condition_variable cv;
  std::deque<AnswerEvent> events;  // not yet taken by a stream
  std::string text;                // all text so far, as generated
  std::string content, reasoning;  // the text apart (without a parser: content == text)
  std::vector<AnswerEvent> tool_calls;
  std::uint32_t reasoning_tokens = 0;
  ThinkingControl::Closed thinking_closed = ThinkingControl::Closed::no;
  std::uint32_t generated = 0;
  bool finished = false;
  Status status;
  GenerationStats stats;
  double tokens_per_round = 0;  // speculative rounds of this request (0: plain decoding)
  bool started = false;                   // a sequence has taken the job (cached_tokens is set)
  std::uint32_t cached_tokens = 0;        // prompt tokens whose KV a previous request left (not prefilled again)
  std::vector<std::uint32_t> shifted_at;  // the sequence's length at each context shift

  // Worker side.
  void push(std::string_view piece, bool token) {
    std::lock_guard lock(m);
    if (token && ++generated == 1) first_token_at = std::chrono::steady_clock::now();
    if (piece.empty()) return;
    text.append(piece);
    if (!parser) return add(AnswerEvent{AnswerEvent::Kind::content, std::string(piece), {}, {}});
    parser->push(piece, scratch_);
    take_scratch();
  }
  // The TokenFn of the job's generation: the token's text in, false once the client has gone.
  bool token(std::string_view text) {
    push(text, true);
    return !cancelled.load();
  }
  void finish(Status st, const GenerationStats& s, double tpr) {
    std::lock_guard lock(m);
    if (parser) {
      parser->finish(scratch_);
      take_scratch();
    }
    status = std::move(st);
    stats = s;
    tokens_per_round = tpr;
    finished = true;
    cv.notify_all();
  }
  // HTTP side: waits until there are pieces (looking every kStreamPoll) or the job is over; moves
  // the pieces into `out`.
  // Returns false when the job is over and nothing is left.
  bool take(std::deque<AnswerEvent>& out) {
    std::unique_lock lock(m);
    while (events.empty() && !finished) cv.wait_for(lock, kStreamPoll);
    out.swap(events);
    events.clear();
    return !out.empty() || !finished;
  }
  // HTTP side: waits (looking every kStreamPoll) until a sequence has taken the job, so that its
  // cached prefix is known, or the job is over.
  void wait_started() {
    std::unique_lock lock(m);
    while (!started && !finished) cv.wait_for(lock, kStreamPoll);
  }
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return finished; });
  }
  // Waits at most `d`; whether the job is over (a whole answer's waiter looks at its client between).
  bool wait_for(std::chrono::milliseconds d) {
    std::unique_lock lock(m);
    return cv.wait_for(lock, d, [&] { return finished; });
  }

 private:
  void add(AnswerEvent e) {
    e.tokens = generated;
    if (generated > 0) e.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - first_token_at).count();
    switch (e.kind) {
      case AnswerEvent::Kind::content: content += e.text; break;
      case AnswerEvent::Kind::reasoning: reasoning += e.text; break;
      case AnswerEvent::Kind::tool_call: tool_calls.push_back(e); break;
    }
    if (streaming) events.push_back(std::move(e));
  }
  void take_scratch() {
    for (AnswerEvent& e : scratch_) add(std::move(e));
    scratch_.clear();
  }
  std::vector<AnswerEvent> scratch_;
  std::chrono::steady_clock::time_point first_token_at;  // of the answer (push)
};

}  // namespace graft::server
