// What `graft serve` takes beyond the profile (docs/serve.md).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "server/json_bounds.hpp"

namespace graft::server {

struct ServerOptions {
  std::string host = "127.0.0.1";  // loopback unless asked
  int port = 8080;                 // 0: any free port (tests)
  std::string api_key;             // empty: no key; else required on every route but /health
  std::uint32_t parallel = 1;      // sequences decoding together
  std::string request_log;         // JSON lines: a file, "-" for stdout, empty for none
  std::size_t max_body_bytes = std::size_t(16) << 20;  // larger bodies get 413
  std::size_t max_connections = 256;  // threads serving connections at once (more wait their turn)
  // Seconds a connection may take to send one request (headers and body), or wait for a thread or
  // a next request, before it is closed (0: no deadline; cpp-httplib's own timeout is 5 s between
  // two reads, which a byte every few seconds never trips).
  int read_deadline_seconds = 60;
  JsonBounds json_bounds;                               // bodies past them get 413 before they are parsed
  // Context shift (plain decoding): when a sequence holds this fraction of its KV capacity, the
  // oldest half of its tokens after the first `context_keep` go and the rest is prefilled again.
  // 0: off (a request ends with finish_reason length, stop_reason context_full).
  double context_shift_at = 0;
  std::uint32_t context_keep = 0;
  // Thinking (chat routes): reasoning tokens a request may spend before graft closes its thinking
  // block (-1: no limit; a request's own budget wins), and whether an end of sequence inside
  // thinking is replaced by the close so that the answer follows.
  std::int64_t reasoning_budget = -1;
  bool answer_after_eos_in_thinking = true;
};

}  // namespace graft::server
