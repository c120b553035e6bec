// What GET /metrics reports, in Prometheus' text format (version 0.0.4): requests by route and
// status, tokens in and out, prefill and decode speed, speculative decoding per drafter, KV use
// and queue depth. Updated by the HTTP threads (requests) and the worker (generations).
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>

#include "engine/session.hpp"
#include "speculative/spec_stats.hpp"

namespace graft::server {

class ServerMetrics {
 public:
  void request(const std::string& route, int status);
  void generation(const GenerationStats& stats, std::uint32_t cached_prompt_tokens);
  void speculative(const SpeculativeStats& stats);  // the decoder's totals after a generation
  // used: KV slots filled; committed: the sequences' committed tokens.
  void kv(std::uint32_t used, std::uint32_t committed, std::uint32_t capacity);
  void forward_pass(std::uint32_t rows, std::uint32_t sequences);
  void context_shift();  // one batched pass of plain decoding

  // The whole exposition; queue_depth and running (sequences generating) are read by the caller.
  std::string render(std::size_t queue_depth, std::size_t running) const;

 private:
  mutable std::mutex m_;
  std::map<std::pair<std::string, int>, std::uint64_t> requests_;
  std::uint64_t generations_ = 0, prompt_tokens_ = 0, cached_tokens_ = 0, generated_tokens_ = 0;
  double prefill_seconds_ = 0, decode_seconds_ = 0;
  double last_prefill_tps_ = 0, last_decode_tps_ = 0;
  SpeculativeStats spec_;
  bool have_spec_ = false;
  std::uint32_t kv_used_ = 0, kv_committed_ = 0, kv_capacity_ = 0;
  std::uint64_t passes_ = 0, pass_rows_ = 0, pass_sequences_ = 0, shifts_ = 0;
};

}  // namespace graft::server
