#include "speculative/fusion_model.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace graft {

namespace {
constexpr double kPriorWeight = 2.0;    // pseudo-trials at rate q before any evidence (per q bin)
constexpr double kBackoffWeight = 4.0;  // pseudo-trials at the coarser rate in a fine cell
constexpr double kRecentDecay = 0.8;    // the context signal: about the last 5 rounds
constexpr double kStartHit = 0.5;       // the signal's middle bucket before any round
}  // namespace

FusionModel::FusionModel(std::size_t n)
    : cells_(n), recent_hit_(n, kStartHit) {}

int FusionModel::depth_bucket(std::uint32_t depth) {
  if (depth <= 4) return static_cast<int>(std::max<std::uint32_t>(depth, 1)) - 1;
  return depth <= 6 ? 4 : 5;
}

int FusionModel::q_bin(float q) { return q >= 1.0f ? kQBins - 1 : static_cast<int>(std::max(q, 0.0f) * kQBins); }

std::size_t FusionModel::fine_index(std::uint32_t depth, int q_bin, int signal) {
  return static_cast<std::size_t>((depth_bucket(depth) * kQBins + q_bin) * kSignals + signal);
}

int FusionModel::signal(std::size_t d) const {
  const double h = recent_hit_[d];
  return h < 1.0 / 3 ? 0 : h < 2.0 / 3 ? 1 : 2;
}

float FusionModel::conditional(std::size_t d, std::uint32_t depth, float q) const {
  q = std::clamp(q, 0.0f, 1.0f);
  if (d >= cells_.size()) return q;
  const Drafter& c = cells_[d];
  const int qb = q_bin(q), s = signal(d);
  const Cell& coarse = c.by_q[static_cast<std::size_t>(qb)];
  const double base = (coarse.accepted + kPriorWeight * q) / (coarse.trials + kPriorWeight);
  const Cell& fine = c.fine[fine_index(depth, qb, s)];
  return static_cast<float>((fine.accepted + kBackoffWeight * base) / (fine.trials + kBackoffWeight));
}

float FusionModel::depth_chance(std::size_t d, std::uint32_t depth) const {
  if (d >= cells_.size()) return 0.5f;
  const Cell& c = cells_[d].by_depth[static_cast<std::size_t>(depth_bucket(depth) * kSignals + signal(d))];
  return static_cast<float>((c.accepted + kPriorWeight * 0.5) / (c.trials + kPriorWeight));
}

void FusionModel::learn(std::span<const DraftTree* const> trees, std::span<const TokenId> truth) {
  const std::size_t n = std::min(trees.size(), cells_.size());
  std::vector<std::uint32_t>& alone = alone_;
  alone.assign(n, 0);
  std::vector<char> matched;  // per node of a tree: its path so far equals the truth
  std::vector<char> reached, extended;  // per depth of a tree
  for (std::size_t d = 0; d < n; ++d) {
    const DraftTree& t = *trees[d];
    if (t.size() == 0) continue;
    Drafter& c = cells_[d];
    matched.assign(t.size(), 0);
    reached.clear();
    extended.clear();
    bool first_hit = false;
    for (std::size_t j = 0; j < t.size(); ++j) {
      const std::int32_t p = t.parents[j];
      if (p >= 0 && !matched[static_cast<std::size_t>(p)]) continue;  // its parent would have been rejected
      const std::uint32_t depth = t.depth(j);
      if (depth > truth.size()) continue;  // past what the target verified: no evidence either way
      const bool hit = t.tokens[j] == truth[depth - 1];
      matched[j] = hit ? 1 : 0;
      if (hit) alone[d] = std::max(alone[d], depth);
      if (depth == 1) first_hit = first_hit || hit;
      const int qb = q_bin(t.q[j]), s = signal(d);
      for (Cell* cell : {&c.fine[fine_index(depth, qb, s)], &c.by_q[static_cast<std::size_t>(qb)]}) {
        cell->trials += 1;
        cell->accepted += hit ? 1 : 0;
      }
      // The chain by depth: reached (a node there had its parent accepted) and extended (one of
      // them was), once per depth, whatever the number of siblings.
      if (reached.size() < depth) reached.resize(depth, 0), extended.resize(depth, 0);
      reached[depth - 1] = 1;
      extended[depth - 1] |= hit ? 1 : 0;
    }
    for (std::size_t k = 0; k < reached.size(); ++k) {
      if (!reached[k]) continue;
      Cell& cell = c.by_depth[static_cast<std::size_t>(depth_bucket(static_cast<std::uint32_t>(k + 1)) * kSignals + signal(d))];
      cell.trials += 1;
      cell.accepted += extended[k];
    }
    // The signal moves after this round's evidence was filed under the old one.
    recent_hit_[d] = kRecentDecay * recent_hit_[d] + (1 - kRecentDecay) * (first_hit ? 1.0 : 0.0);
  }
}

namespace {
template <std::size_t N, class Cell>
nlohmann::json cells_json(const std::array<Cell, N>& a) {
  nlohmann::json j = nlohmann::json::array();
  for (const Cell& c : a) j.push_back({c.trials, c.accepted});
  return j;
}
template <std::size_t N, class Cell>
void cells_from(const nlohmann::json& j, std::array<Cell, N>& a) {
  if (j.size() != N) throw std::invalid_argument("a table of the wrong size");
  for (std::size_t i = 0; i < N; ++i) {
    const double t = j.at(i).at(0).get<double>(), k = j.at(i).at(1).get<double>();
    if (!std::isfinite(t) || !std::isfinite(k) || t < 0 || k < 0 || k > t + 1e-9)
      throw std::invalid_argument("a cell with impossible counts");
    a[i] = Cell{t, k};
  }
}
}  // namespace

nlohmann::json FusionModel::to_json() const {
  nlohmann::json j = nlohmann::json::array();
  for (const Drafter& c : cells_) j.push_back({{"fine", cells_json(c.fine)}, {"by_q", cells_json(c.by_q)}, {"by_depth", cells_json(c.by_depth)}});
  return j;
}

void FusionModel::from_json(const nlohmann::json& j) {
  if (j.size() != cells_.size()) throw std::invalid_argument("another number of drafters");
  std::vector<Drafter> cells(cells_.size());
  for (std::size_t d = 0; d < cells.size(); ++d) {
    cells_from(j.at(d).at("fine"), cells[d].fine);
    cells_from(j.at(d).at("by_q"), cells[d].by_q);
    cells_from(j.at(d).at("by_depth"), cells[d].by_depth);
  }
  cells_ = std::move(cells);
}

}  // namespace graft
