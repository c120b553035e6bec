// One request's generation, shared by the HTTP thread that waits on it and the worker that runs
// it: the worker appends text pieces as tokens come and marks it finished; the HTTP side takes
// the pieces (streaming) or waits for the end, and sets `cancelled` when its client has gone.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <string>
#include <vector>

#include "engine/session.hpp"

namespace graft::server {

struct GenerationJob {
  // Set by the HTTP side before submitting.
  std::vector<TokenId> prompt;
  GenerationOptions options;
  std::atomic<bool> cancelled{false};
  // Whether a reader takes pieces as they come (a stream). Nobody is woken per token (on 2 cores a
  // wake per token took a quarter of the decode speed): a stream's reader looks every
  // kStreamPoll, a whole answer's waiter is woken once, at the end.
  bool streaming = false;
  static constexpr std::chrono::milliseconds kStreamPoll{2};

  // Written by the worker under `m`.
  std::mutex m;
  std::condition_variable cv;
  std::deque<std::string> pieces;  // text not yet taken by a stream
  std::string text;                // all text so far
  std::uint32_t generated = 0;
  bool finished = false;
  Status status;
  GenerationStats stats;
  double tokens_per_round = 0;  // speculative rounds of this request (0: plain decoding)
  std::uint32_t cached_tokens = 0;
  std::vector<std::uint32_t> shifted_at;  // the sequence's length at each context shift  // prompt tokens whose KV a previous request left (not prefilled again)

  // Worker side.
  void push(std::string_view piece, bool token) {
    std::lock_guard lock(m);
    if (token) ++generated;
    if (piece.empty()) return;
    text.append(piece);
    if (streaming) pieces.emplace_back(piece);
  }
  // The TokenFn of the job's generation: the token's text in, false once the client has gone.
  bool token(std::string_view text) {
    push(text, true);
    return !cancelled.load();
  }
  void finish(Status st, const GenerationStats& s, double tpr) {
    std::lock_guard lock(m);
    status = std::move(st);
    stats = s;
    tokens_per_round = tpr;
    finished = true;
    cv.notify_all();
  }
  // HTTP side: waits until there are pieces (looking every kStreamPoll) or the job is over; moves
  // the pieces into `out`.
  // Returns false when the job is over and nothing is left.
  bool take(std::deque<std::string>& out) {
    std::unique_lock lock(m);
    while (pieces.empty() && !finished) cv.wait_for(lock, kStreamPoll);
    out.swap(pieces);
    pieces.clear();
    return !out.empty() || !finished;
  }
  void wait() {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return finished; });
  }
};

}  // namespace graft::server
