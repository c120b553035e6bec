#include "bench/session_speed.hpp"

#include <algorithm>
#include <chrono>

namespace graft {

namespace {
double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
TokenId argmax(const std::vector<float>& v) {
  return static_cast<TokenId>(std::max_element(v.begin(), v.end()) - v.begin());
}
}  // namespace

Expected<std::vector<SpeedSample>> measure_speed(Session& s, std::span<const TokenId> prompt, std::int64_t gen_tokens,
                                                 std::int64_t reps) {
  if (prompt.empty() || gen_tokens < 2 || reps < 1)
    return Status(Errc::invalid_argument, "measure_speed: needs a prompt, gen_tokens >= 2 and reps >= 1");
  std::vector<SpeedSample> samples;
  for (std::int64_t r = 0; r < reps; ++r) {
    GRAFT_TRY(s.reset());
    auto t0 = std::chrono::steady_clock::now();
    GRAFT_TRY(s.append(prompt));
    const double t_prefill = seconds_since(t0);
    t0 = std::chrono::steady_clock::now();
    for (std::int64_t i = 0; i + 1 < gen_tokens; ++i) {
      const TokenId next = argmax(s.logits());
      GRAFT_TRY(s.append(std::span<const TokenId>(&next, 1)));
    }
    const double t_decode = seconds_since(t0);
    samples.push_back({double(prompt.size()) / t_prefill, double(gen_tokens - 1) / t_decode});
  }
  return samples;
}

}  // namespace graft
