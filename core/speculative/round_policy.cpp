#include "speculative/round_policy.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <stdexcept>

namespace graft {

namespace {
constexpr std::uint64_t kAdoptMargin = 16;  // rounds (should_adopt)
constexpr std::uint64_t kLearnRounds = 1;  // rounds before the cost-based choices start: every drafter timed once
constexpr std::uint64_t kProbeEvery = 16;  // a skipped drafter is asked again after this many rounds,
constexpr std::uint64_t kProbeMax = 128;   // ... doubling while it stays not worth its cost
constexpr double kNegligible = 0.05;       // of a decode step: a proposal this cheap is always asked
constexpr double kGainDecay = 0.9;         // a bucket's gain: about its last 10 rounds
constexpr double kPriorWeight = 1.0;       // pseudo-rounds of the prior in a bucket's gain
constexpr double kPriorGain = 1.0;         // tokens, before a drafter's first measured round
constexpr double kExploreBonus = 0.5;      // tokens of optimism in a bucket with no rounds yet
constexpr double kNodesDecay = 0.8;        // the verified nodes a drafter adds: about its last 5 rounds
constexpr double kCostDecay = 0.9;         // a drafter's mean proposal time: about its last 10
constexpr double kRoundDecay = 0.95;       // the speed estimate: about the last 20 rounds
constexpr std::uint32_t kExploreEvery = 16;  // every 16th round verifies a wider tree (the cost curve sees sizes)
constexpr std::uint32_t kStarvedRounds = 8;  // after 8 rounds verifying nothing, the best node is verified anyway
constexpr std::uint32_t kWarmNodes = 4;      // nodes verified per round before the cost curve is known
constexpr std::uint32_t kFirstDepth = 3;     // a drafter's first proposal, before its cost is known
constexpr double kProbeCostUnit = 0.5;       // decode steps: a probe dearer than this waits longer
}  // namespace

RoundPolicy::RoundPolicy(std::size_t n, const RoundPolicyOptions& options)
    : options_(options), fusion_(n), drafters_(n), order_(n) {
  std::iota(order_.begin(), order_.end(), std::size_t{0});
  for (PerDrafter& p : drafters_) p.probe_interval = kProbeEvery;
}

int RoundPolicy::bucket(double e) {
  return e < 0.25 ? 0 : e < 1 ? 1 : e < 2 ? 2 : e < 4 ? 3 : 4;
}

bool RoundPolicy::warm() const {
  return options_.adaptive && rounds_ >= kLearnRounds && verify_.estimate(1) > 0;
}

double RoundPolicy::propose_seconds(std::size_t d, std::uint32_t depth) const {
  return drafters_[d].cost.estimate(std::max<std::uint32_t>(depth, 1));
}

double RoundPolicy::gain(std::size_t d, int b) const {
  const PerDrafter& p = drafters_[d];
  // Before a bucket has its own rounds: what the drafter gets alone, less what the drafters
  // before it promise there (a gain cannot exceed its own accepted length), or its mean gain
  // over the other buckets where that is more.
  constexpr std::array<double, kBuckets> kPromised{0.0, 0.5, 1.5, 3.0, 5.0};
  const double alone = (p.alone.sum + kPriorWeight * kPriorGain) / (p.alone.w + kPriorWeight);
  double prior = alone - kPromised[static_cast<std::size_t>(b)];
  if (p.gain_all.w > 0) prior = std::max(prior, p.gain_all.sum / p.gain_all.w);
  const Mean& m = p.gain[static_cast<std::size_t>(b)];
  return (m.sum + kPriorWeight * prior) / (m.w + kPriorWeight);
}

void RoundPolicy::begin_round(std::uint32_t max_nodes) {
  max_nodes_ = max_nodes;
  chances_.clear();
  spent_ = 0;
  for (PerDrafter& p : drafters_) p.asked = false, p.depth = 0;
  // Cheapest first, each at the depth it was last asked for (a drafter not yet measured counts as
  // free, so it is measured at once).
  const auto cost = [&](std::size_t d) { return propose_seconds(d, std::max<std::uint32_t>(1, drafters_[d].last_depth)); };
  std::stable_sort(order_.begin(), order_.end(), [&](std::size_t a, std::size_t b) { return cost(a) < cost(b); });
}

std::pair<double, std::uint32_t> RoundPolicy::round_value() const {
  std::vector<float> c(chances_);
  std::sort(c.begin(), c.end(), std::greater<>());
  if (c.size() > max_nodes_) c.resize(max_nodes_);
  const std::uint32_t n = warm() ? std::min<std::uint32_t>(verify_.best_count(c), static_cast<std::uint32_t>(c.size()))
                                 : static_cast<std::uint32_t>(c.size());
  return {1.0 + std::accumulate(c.begin(), c.begin() + n, 0.0), n};
}

std::uint32_t RoundPolicy::best_depth(std::size_t d, std::uint32_t max_depth) const {
  // The chain length k maximising (1 + expected accepted) / (verify of k + 1 rows + proposing
  // k), with the drafter's learnt chances by depth; one more than that, so the merge has a choice.
  double reach = 1.0, expected = 1.0, best_rate = 1.0 / verify_.estimate(1);
  std::uint32_t best = 0;
  for (std::uint32_t k = 1; k <= max_depth; ++k) {
    reach *= fusion_.depth_chance(d, k);
    expected += reach;
    const double rate = expected / (verify_.estimate(k + 1) + propose_seconds(d, k));
    if (rate > best_rate) best_rate = rate, best = k;
  }
  return std::min(max_depth, best + 1);
}

std::uint32_t RoundPolicy::draft_depth(std::size_t d, std::uint32_t max_depth) {
  PerDrafter& p = drafters_[d];
  const auto value = round_value();  // what the drafters asked before it promise
  p.bucket = bucket(value.first - 1.0);
  std::uint32_t k = max_depth;
  if (options_.draft_length > 0) k = std::min(max_depth, options_.draft_length);
  else if (warm() && p.cost_seen) k = best_depth(d, max_depth);
  // A drafter never timed proposes shallow first: its first proposal is also its most expensive
  // lesson (a 7-slot block of a drafter model can cost several decode steps of a small target).
  else if (options_.adaptive && !p.cost_seen) k = std::min(max_depth, kFirstDepth);
  if (k == 0) return 0;
  if (!warm() || worth_asking(d, k, value)) return k;
  return 0;
}

bool RoundPolicy::worth_asking(std::size_t d, std::uint32_t k, std::pair<double, std::uint32_t> value) {
  PerDrafter& p = drafters_[d];
  const double c = propose_seconds(d, k), t1 = verify_.estimate(1);
  // Negligible by its measured proposals themselves, not the curve's estimate at a depth it was
  // rarely asked for (an n-gram lookup's few microseconds must never be priced out).
  if (!p.cost_seen || p.mean_cost.sum < kNegligible * t1 * p.mean_cost.w) return true;
  // The round without d, then with it: its expected gain in this bucket, its proposal, and the
  // verify rows its nodes add.
  const auto [e0, n0] = value;
  const double host = (host_.w > 0 ? host_.sum / host_.w : 0.0) + (rest_.w > 0 ? rest_.sum / rest_.w : 0.0);
  const double t0 = spent_ + verify_.estimate(n0 + 1) + host;
  const double added = p.added_nodes.w > 0 ? p.added_nodes.sum / p.added_nodes.w : double(k);
  const auto rows = static_cast<std::uint32_t>(std::min<double>(n0 + 1 + std::lround(added), max_nodes_ + 1));
  const double t1_with = t0 + c + verify_.estimate(std::max(rows, n0 + 1)) - verify_.estimate(n0 + 1);
  // Asked on the gain it may still turn out to have: one unlucky round must not rule out a
  // drafter for a hundred rounds (the bonus shrinks as the bucket's rounds add up).
  const double g = gain(d, p.bucket);
  const double bonus = kExploreBonus / (1.0 + double(p.rounds_in[static_cast<std::size_t>(p.bucket)]));
  if ((e0 + g + bonus) / t1_with >= e0 / t0) {
    p.probe_interval = kProbeEvery;
    p.next_probe = 0;
    return true;
  }
  // Skipped, but asked again now and then so its gain stays measured; each probe that finds it
  // still not worth its cost waits twice as long for the next. The first wait is longer the
  // further its gain is from paying (up to 8 times: a probe costs its proposal and its rows).
  if (p.next_probe == 0) {
    // ... and the more a probe costs: a proposal of several decode steps is probed rarely.
    const double needed = e0 * (t1_with / t0 - 1.0);
    const double far = std::clamp(needed / std::max(g, 0.05) * std::max(1.0, c / (kProbeCostUnit * t1)), 1.0, 8.0);
    p.probe_interval = std::min<std::uint64_t>(kProbeMax, static_cast<std::uint64_t>(std::lround(kProbeEvery * far)));
    p.next_probe = rounds_ + p.probe_interval;
    return false;
  }
  if (rounds_ < p.next_probe) return false;
  p.probe_interval = std::min(2 * p.probe_interval, kProbeMax);
  p.next_probe = rounds_ + p.probe_interval;
  return true;
}

void RoundPolicy::proposed(std::size_t d, std::uint32_t depth, double seconds, const DraftTree& tree) {
  PerDrafter& p = drafters_[d];
  p.asked = true;
  p.depth = depth;
  p.last_depth = depth;
  spent_ += seconds;
  // The steady cost only: a drafter asked after skipped rounds first catches up on them (a
  // bounded batch), which would price it as if it were always asked after a gap, and so skipped
  // more, and so dearer again.
  if (p.asked_last || !p.cost_seen) {
    p.cost.record(std::max<std::uint32_t>(depth, 1), seconds);
    p.mean_cost.add(seconds, kCostDecay);
  }
  p.cost_seen = true;
  // Its nodes' chances of acceptance (products along their paths), for the drafters after it.
  std::vector<float> path(tree.size());
  for (std::size_t j = 0; j < tree.size(); ++j) {
    const std::int32_t parent = tree.parents[j];
    path[j] = (parent < 0 ? 1.0f : path[static_cast<std::size_t>(parent)]) * fusion_.conditional(d, tree.depth(j), tree.q[j]);
    chances_.push_back(path[j]);
  }
}

std::uint32_t RoundPolicy::verify_count(std::span<const float> chances) {
  const auto all = static_cast<std::uint32_t>(chances.size());
  if (!options_.adaptive || all == 0) return all;
  // Before the cost curve is known, a few nodes: a wide pass can cost several decode steps.
  if (!warm()) return std::min(all, kWarmNodes);
  std::uint32_t n = verify_.best_count(chances);
  // Now and then a wider pass, so the cost curve keeps seeing more than one size.
  if (++explore_ % kExploreEvery == 0) n = std::max(n + 2, 2 * n);
  // Now and then a draft although none looked worth it, so the chances keep learning.
  if (n > 0) starved_ = 0;
  else if (++starved_ >= kStarvedRounds) n = 1, starved_ = 0;
  return std::min(n, all);
}

void RoundPolicy::verified(std::uint32_t rows, double seconds) {
  // Every pass from the first: the prompt's prefill ran just before, so the weights are in cache
  // and the scratch memory grown as they will be (a pass slower than twice the estimate, a
  // preemption, is clipped by the curve).
  verify_.record(rows, seconds);
  round_verify_ = seconds;
}

void RoundPolicy::learn(std::span<const DraftTree* const> trees, std::span<const TokenId> truth,
                        std::span<const std::uint32_t> own_nodes, double host_seconds, double rest_seconds) {
  fusion_.learn(trees, truth);
  const auto alone = fusion_.accepted_lengths();
  // Each asked drafter's gain over those asked before it this round, under the bucket it was
  // asked in (what they promised then).
  std::uint32_t before = 0;
  for (std::size_t d : order_) {
    PerDrafter& p = drafters_[d];
    p.asked_last = p.asked;
    if (!p.asked) continue;
    const std::uint32_t mine = d < alone.size() ? alone[d] : 0;
    const double g = mine > before ? double(mine - before) : 0.0;
      p.gain[static_cast<std::size_t>(p.bucket)].add(g, kGainDecay);
    ++p.rounds_in[static_cast<std::size_t>(p.bucket)];
    p.gain_all.add(g, kGainDecay);
    p.alone.add(double(mine), kGainDecay);
    p.added_nodes.add(d < own_nodes.size() ? double(own_nodes[d]) : 0.0, kNodesDecay);
    before = std::max(before, mine);
  }
  host_.add(host_seconds, kRoundDecay);
  rest_.add(rest_seconds, kRoundDecay);
  round_tokens_.add(double(truth.size()), kRoundDecay);
  round_seconds_.add(spent_ + round_verify_ + host_seconds + rest_seconds, kRoundDecay);
  ++rounds_;
  ++learnt_rounds_;
}

bool RoundPolicy::should_adopt(std::uint64_t mine, std::uint64_t theirs) {
  // At least twice the experience, and a probe interval's worth more: two slots of about the same
  // experience keep their own.
  return theirs >= 2 * mine + kAdoptMargin;
}

double RoundPolicy::estimated_speedup() const {
  const double t1 = verify_.estimate(1);
  if (round_seconds_.w <= 0 || round_seconds_.sum <= 0 || t1 <= 0) return 0;
  return round_tokens_.sum / round_seconds_.sum * t1;
}

namespace {
constexpr const char* kFormat = "graft round policy 1";  // a new field or meaning: a new number
}  // namespace

nlohmann::json RoundPolicy::to_json() const {
  const auto mean = [](const Mean& m) { return nlohmann::json::array({m.w, m.sum}); };
  nlohmann::json drafters = nlohmann::json::array();
  for (const PerDrafter& p : drafters_) {
    nlohmann::json gains = nlohmann::json::array();
    for (const Mean& g : p.gain) gains.push_back(mean(g));
    drafters.push_back({{"cost", p.cost.to_json()}, {"gain", gains}, {"rounds_in", p.rounds_in}, {"gain_all", mean(p.gain_all)},
                        {"alone", mean(p.alone)}, {"added_nodes", mean(p.added_nodes)}, {"mean_cost", mean(p.mean_cost)},
                        {"depth", p.last_depth}});
  }
  return {{"format", kFormat}, {"verify", verify_.to_json()}, {"fusion", fusion_.to_json()}, {"drafters", drafters},
          {"host", mean(host_)}, {"rest", mean(rest_)}, {"learnt_rounds", learnt_rounds_}};
}

void RoundPolicy::from_json(const nlohmann::json& j) {
  if (j.at("format").get<std::string>() != kFormat) throw std::invalid_argument("not a round policy of this version");
  const auto mean = [](const nlohmann::json& v) {
    Mean m{v.at(0).get<double>(), v.at(1).get<double>()};
    if (!std::isfinite(m.w) || !std::isfinite(m.sum) || m.w < 0) throw std::invalid_argument("a mean with a bad weight");
    return m;
  };
  const auto& jd = j.at("drafters");
  if (jd.size() != drafters_.size()) throw std::invalid_argument("another number of drafters");
  RoundPolicy loaded(*this);  // all or nothing
  loaded.verify_.from_json(j.at("verify"));
  loaded.fusion_.from_json(j.at("fusion"));
  for (std::size_t d = 0; d < drafters_.size(); ++d) {
    PerDrafter& p = loaded.drafters_[d];
    p.cost.from_json(jd.at(d).at("cost"));
    const auto& gains = jd.at(d).at("gain");
    if (gains.size() != kBuckets) throw std::invalid_argument("another number of gain buckets");
    for (std::size_t b = 0; b < kBuckets; ++b) p.gain[b] = mean(gains.at(b));
    const auto& rounds_in = jd.at(d).at("rounds_in");
    if (rounds_in.size() != kBuckets) throw std::invalid_argument("another number of gain buckets");
    for (std::size_t b = 0; b < kBuckets; ++b) p.rounds_in[b] = rounds_in.at(b).get<std::uint64_t>();
    p.gain_all = mean(jd.at(d).at("gain_all"));
    p.alone = mean(jd.at(d).at("alone"));
    p.added_nodes = mean(jd.at(d).at("added_nodes"));
    p.mean_cost = mean(jd.at(d).at("mean_cost"));
    p.last_depth = jd.at(d).at("depth").get<std::uint32_t>();
    p.cost_seen = p.cost.estimate(1) > 0;
  }
  loaded.host_ = mean(j.at("host"));
  loaded.rest_ = mean(j.at("rest"));
  loaded.learnt_rounds_ = j.value("learnt_rounds", std::uint64_t{0});  // absent in files of the first sessions
  // Known costs: choices by them from the first round, passes recorded from the first.
  loaded.rounds_ = std::max<std::uint64_t>(rounds_, kLearnRounds);
  *this = std::move(loaded);
}

}  // namespace graft
