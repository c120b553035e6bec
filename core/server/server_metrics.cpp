#include "server/server_metrics.hpp"

#include <fmt/format.h>

namespace graft::server {

void ServerMetrics::request(const std::string& route, int status) {
  std::lock_guard lock(m_);
  ++requests_[{route, status}];
}

void ServerMetrics::generation(const GenerationStats& s, std::uint32_t cached_prompt_tokens) {
  std::lock_guard lock(m_);
  ++generations_;
  prompt_tokens_ += s.prompt_tokens;
  cached_tokens_ += cached_prompt_tokens;
  generated_tokens_ += s.generated_tokens;
  prefill_seconds_ += s.prefill_seconds;
  decode_seconds_ += s.decode_seconds;
  // Over the tokens actually run: a cached prefix took no time.
  last_prefill_tps_ = s.prefill_seconds > 0 ? (s.prompt_tokens - cached_prompt_tokens) / s.prefill_seconds : 0;
  last_decode_tps_ = s.decode_tps();
}

void ServerMetrics::speculative(const SpeculativeStats& s) {
  std::lock_guard lock(m_);
  spec_ = s;
  have_spec_ = true;
}

void ServerMetrics::kv(std::uint32_t used, std::uint32_t committed, std::uint32_t capacity) {
  std::lock_guard lock(m_);
  kv_used_ = used;
  kv_committed_ = committed;
  kv_capacity_ = capacity;
}

void ServerMetrics::forward_pass(std::uint32_t rows, std::uint32_t sequences) {
  std::lock_guard lock(m_);
  ++passes_;
  pass_rows_ += rows;
  pass_sequences_ += sequences;
}

void ServerMetrics::context_shift() {
  std::lock_guard lock(m_);
  ++shifts_;
}

namespace {
// Label values escape backslash, double quote and newline.
std::string label(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}
void metric(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}
}  // namespace

std::string ServerMetrics::render(std::size_t queue_depth, std::size_t running) const {
  std::lock_guard lock(m_);
  std::string o;
  metric(o, "graft_requests_total", "counter", "HTTP requests answered, by route and status code.");
  for (const auto& [key, n] : requests_)
    o += fmt::format("graft_requests_total{{route=\"{}\",status=\"{}\"}} {}\n", label(key.first), key.second, n);
  metric(o, "graft_generations_total", "counter", "Generations run to their end (any finish reason).");
  o += fmt::format("graft_generations_total {}\n", generations_);
  metric(o, "graft_prompt_tokens_total", "counter", "Prompt tokens of the requests (cached ones included).");
  o += fmt::format("graft_prompt_tokens_total {}\n", prompt_tokens_);
  metric(o, "graft_prompt_tokens_cached_total", "counter", "Prompt tokens whose KV a previous request left (not prefilled again).");
  o += fmt::format("graft_prompt_tokens_cached_total {}\n", cached_tokens_);
  metric(o, "graft_generated_tokens_total", "counter", "Tokens generated.");
  o += fmt::format("graft_generated_tokens_total {}\n", generated_tokens_);
  metric(o, "graft_prefill_seconds_total", "counter", "Time in prompt forward passes.");
  o += fmt::format("graft_prefill_seconds_total {}\n", prefill_seconds_);
  metric(o, "graft_decode_seconds_total", "counter", "Time decoding after the first generated token.");
  o += fmt::format("graft_decode_seconds_total {}\n", decode_seconds_);
  metric(o, "graft_last_prefill_tokens_per_second", "gauge", "Prefill speed of the last generation.");
  o += fmt::format("graft_last_prefill_tokens_per_second {}\n", last_prefill_tps_);
  metric(o, "graft_last_decode_tokens_per_second", "gauge", "Decode speed of the last generation.");
  o += fmt::format("graft_last_decode_tokens_per_second {}\n", last_decode_tps_);
  metric(o, "graft_queue_depth", "gauge", "Requests waiting for the model (not counting the running one).");
  o += fmt::format("graft_queue_depth {}\n", queue_depth);
  metric(o, "graft_requests_running", "gauge", "Generations running now (at most --parallel).");
  o += fmt::format("graft_requests_running {}\n", running);
  metric(o, "graft_kv_tokens_used", "gauge", "KV slots holding tokens, all sequences.");
  o += fmt::format("graft_kv_tokens_used {}\n", kv_used_);
  metric(o, "graft_kv_tokens_committed", "gauge", "Tokens the sequences have committed (used beyond it: rows of a round not yet cut).");
  o += fmt::format("graft_kv_tokens_committed {}\n", kv_committed_);
  metric(o, "graft_kv_tokens_capacity", "gauge", "KV slots of all sequences (each request gets one sequence's: n_ctx_per_request).");
  o += fmt::format("graft_kv_tokens_capacity {}\n", kv_capacity_);
  metric(o, "graft_forward_passes_total", "counter", "Batched forward passes (every running sequence's rows in one; speculative rounds included).");
  o += fmt::format("graft_forward_passes_total {}\n", passes_);
  metric(o, "graft_forward_rows_total", "counter", "Token rows in those passes.");
  o += fmt::format("graft_forward_rows_total {}\n", pass_rows_);
  metric(o, "graft_forward_sequences_total", "counter", "Sequences in those passes, summed over passes.");
  o += fmt::format("graft_forward_sequences_total {}\n", pass_sequences_);
  metric(o, "graft_context_shifts_total", "counter", "Context shifts (--context-shift-at).");
  o += fmt::format("graft_context_shifts_total {}\n", shifts_);
  if (have_spec_) {
    metric(o, "graft_speculative_rounds_total", "counter", "Speculative rounds (one verify pass each).");
    o += fmt::format("graft_speculative_rounds_total {}\n", spec_.rounds);
    metric(o, "graft_speculative_tokens_per_round", "gauge", "Tokens emitted per speculative round, all generations.");
    o += fmt::format("graft_speculative_tokens_per_round {}\n", spec_.tokens_per_round());
    metric(o, "graft_speculative_drafted_total", "counter", "Draft tokens proposed, by drafter.");
    for (const DrafterStats& d : spec_.drafters)
      o += fmt::format("graft_speculative_drafted_total{{drafter=\"{}\"}} {}\n", label(d.name), d.proposed);
    metric(o, "graft_speculative_accepted_total", "counter", "Draft tokens accepted, by drafter.");
    for (const DrafterStats& d : spec_.drafters)
      o += fmt::format("graft_speculative_accepted_total{{drafter=\"{}\"}} {}\n", label(d.name), d.accepted);
    metric(o, "graft_speculative_acceptance", "gauge", "Accepted over proposed draft tokens, by drafter.");
    for (const DrafterStats& d : spec_.drafters)
      o += fmt::format("graft_speculative_acceptance{{drafter=\"{}\"}} {}\n", label(d.name),
                       d.proposed ? double(d.accepted) / double(d.proposed) : 0.0);
    metric(o, "graft_speculative_drafter_tokens_per_round", "gauge",
           "Per drafter: 1 + its accepted tokens per round it proposed in (its mean accepted length, plus the "
           "target's own token).");
    for (const DrafterStats& d : spec_.drafters)
      o += fmt::format("graft_speculative_drafter_tokens_per_round{{drafter=\"{}\"}} {}\n", label(d.name),
                       d.rounds ? 1.0 + d.mean_accepted_length() : 0.0);
    metric(o, "graft_speculative_drafter_failures_total", "counter",
           "Drafter calls that failed (each warned; the proposal skipped or the drafter off for the sequence).");
    for (const DrafterStats& d : spec_.drafters)
      o += fmt::format("graft_speculative_drafter_failures_total{{drafter=\"{}\"}} {}\n", label(d.name), d.failures);
  }
  return o;
}

}  // namespace graft::server
