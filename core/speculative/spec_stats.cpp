#include "speculative/spec_stats.hpp"

#include <fmt/format.h>

namespace graft {

void SpeculativeStats::clear_counts() {
  std::vector<DrafterStats> d = std::move(drafters);
  *this = SpeculativeStats{};
  for (auto& x : d) drafters.push_back(DrafterStats{x.name});
}

namespace {
nlohmann::json depth_json(const DepthCounts& d) {
  auto j = nlohmann::json::array();
  for (std::size_t i = 0; i < d.proposed.size(); ++i) {
    j.push_back({{"depth", i + 1}, {"proposed", d.proposed[i]}, {"accepted", d.accepted[i]},
                 {"acceptance", d.proposed[i] ? double(d.accepted[i]) / double(d.proposed[i]) : 0.0}});
  }
  return j;
}

// Drafter d's part of the accepted tokens (shared tokens split between their proposers).
double share_of_accepted(const SpeculativeStats& s, const DrafterStats& d) {
  return s.accepted ? d.accepted_share / double(s.accepted) : 0.0;
}
}  // namespace

nlohmann::json to_json(const SpeculativeStats& s) {
  nlohmann::json drafters = nlohmann::json::object();
  for (const DrafterStats& d : s.drafters)
    drafters[d.name] = {{"rounds", d.rounds},
                        {"skipped", d.skipped},
                        {"share_of_accepted", share_of_accepted(s, d)},
                        {"proposed", d.proposed},
                        {"accepted", d.accepted},
                        {"acceptance", d.acceptance()},
                        {"mean_accepted_length", d.mean_accepted_length()},
                        {"failures", d.failures},
                        {"seconds", d.seconds},
                        {"proposals", d.proposals},
                        {"propose_seconds", d.propose_seconds},
                        {"propose_steps", d.propose_steps},
                        {"gain_by_promised", d.gain},
                        {"depth", depth_json(d.depth)}};
  return {{"rounds", s.rounds},
          {"tokens_per_round", s.tokens_per_round()},
          {"drafted", s.drafted},
          {"accepted", s.accepted},
          {"acceptance", s.acceptance()},
          {"seconds",
           {{"draft", s.draft_seconds}, {"verify", s.verify_seconds}, {"accept", s.accept_seconds},
            {"rollback", s.rollback_seconds}, {"host", s.host_seconds}}},
          {"host_us_per_round", s.host_us_per_round()},
          {"estimated_speedup", s.estimated_speedup},
          {"depth", depth_json(s.depth)},
          {"drafters", drafters}};
}

std::string format_stats(const SpeculativeStats& s) {
  std::string out = fmt::format("speculative: {} rounds, {:.2f} tokens/round, {} drafted, {} accepted ({:.1f}%)\n",
                                s.rounds, s.tokens_per_round(), s.drafted, s.accepted, 100 * s.acceptance());
  for (const DrafterStats& d : s.drafters)
    out += fmt::format(
        "  drafter {:<8} {:>6} proposed {:>6} accepted ({:5.1f}%)  mean accepted {:.2f} in {} rounds, {:.0f}% of the "
        "accepted{}{}\n",
        d.name, d.proposed, d.accepted, 100 * d.acceptance(), d.mean_accepted_length(), d.rounds,
        100 * share_of_accepted(s, d), d.skipped ? fmt::format(", skipped {} rounds (gain below cost)", d.skipped) : "",
        d.failures ? fmt::format(", {} failed calls", d.failures) : "");
  for (const DrafterStats& d : s.drafters) {
    if (d.gain.empty() || d.proposals == 0) continue;
    std::string gains;
    for (double g : d.gain) gains += fmt::format("{}{:.2f}", gains.empty() ? "" : " / ", g);
    out += fmt::format("  policy: {:<8} a proposal costs {:.2f} decode steps; expected gain {} tokens per round when the "
                       "drafters before it promise <0.25 / <1 / <2 / <4 / more\n", d.name, d.propose_steps, gains);
  }
  std::string depths;
  for (std::size_t i = 0; i < s.depth.proposed.size(); ++i) {
    depths += fmt::format(" {}:{:.0f}%", i + 1,
                          s.depth.proposed[i] ? 100.0 * double(s.depth.accepted[i]) / double(s.depth.proposed[i]) : 0.0);
  }
  if (!depths.empty()) out += "  acceptance by depth:" + depths + "\n";
  const double total = s.draft_seconds + s.verify_seconds + s.accept_seconds + s.rollback_seconds;
  out += fmt::format("  time: draft {:.1f} ms, verify {:.1f} ms, accept {:.1f} ms, rollback {:.1f} ms (of {:.1f} ms); "
                     "host work {:.1f} us/round\n",
                     1e3 * s.draft_seconds, 1e3 * s.verify_seconds, 1e3 * s.accept_seconds, 1e3 * s.rollback_seconds,
                     1e3 * total, s.host_us_per_round());
  if (s.estimated_speedup > 0)
    out += fmt::format("  estimated speedup over plain decoding: {:.2f}x (the policy's: recent tokens per second of the "
                       "rounds against its measured one-row pass)\n", s.estimated_speedup);
  return out;
}

}  // namespace graft
