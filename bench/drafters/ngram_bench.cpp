// The n-gram drafter's index at long contexts: per stream kind, the cost of learning a token,
// of one proposal (longest match, followers, tree) at the end of the context, of a speculative
// round's append-and-cut-back, and the index's memory. Medians over the last --window positions.
//
//   ngram_bench [--tokens 100000] [--max-match 8] [--window 2000] [--vocab 32000]
//
// Streams: "text" repeats 200-token motifs with 5% mutations (long matches, few followers);
// "random" never repeats at length >= 2 (the trie's worst memory); "same" is one token repeated
// (every suffix matches, the deepest trie paths).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "ngram_draft.hpp"
#include "ngram_index.hpp"

using namespace graft::ngram;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage = "ngram_bench [--tokens 100000] [--max-match 8] [--window 2000] [--vocab 32000]";

std::vector<std::int32_t> stream(const std::string& kind, std::size_t n, std::int32_t vocab, std::mt19937& rng) {
  std::uniform_int_distribution<std::int32_t> tok(0, vocab - 1);
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<std::int32_t> t;
  t.reserve(n);
  if (kind == "same") return std::vector<std::int32_t>(n, 7);
  if (kind == "random") {
    while (t.size() < n) t.push_back(tok(rng));
    return t;
  }
  std::vector<std::int32_t> motif(200);
  while (t.size() < n) {
    if (u(rng) < 0.1)
      for (auto& x : motif) x = tok(rng);
    for (std::int32_t m : motif) t.push_back(u(rng) < 0.05 ? tok(rng) : m);
  }
  t.resize(n);
  return t;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

double micros(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::micro>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  namespace po = boost::program_options;
  long tokens = 100000, max_match = 8, window = 2000, vocab = 32000;
  po::options_description opts("options");
  opts.add_options()("tokens", po::value(&tokens), "context length")("max-match", po::value(&max_match), "max_match")(
      "window", po::value(&window), "positions measured at the end")("vocab", po::value(&vocab), "vocabulary");
  if (!graft::bench::parse_options(argc, argv, kUsage, opts)) return 2;
  if (tokens < 2 || window < 1 || window >= tokens || max_match < 1 || max_match > 64 || vocab < 2) {
    std::fprintf(stderr, "usage: %s\n", kUsage);
    return 2;
  }
  std::printf("%-7s %10s %12s %12s %12s %10s %10s %8s\n", "stream", "tokens", "learn us/tok", "propose us",
              "round us", "nodes", "MiB", "match");
  for (const std::string kind : {"text", "random", "same"}) {
    std::mt19937 rng(1);
    const auto t = stream(kind, static_cast<std::size_t>(tokens), static_cast<std::int32_t>(vocab), rng);
    const std::size_t head = t.size() - static_cast<std::size_t>(window);
    NgramIndex idx(static_cast<std::uint32_t>(max_match));
    const auto t0 = Clock::now();
    idx.append(std::span<const std::int32_t>(t.data(), head));
    const double learn = micros(t0, Clock::now()) / static_cast<double>(head);
    std::vector<double> propose_us, round_us;
    std::vector<Follower> scratch;
    graft::DraftTree tree;
    double matched = 0;
    const std::int32_t drafted[8] = {0, 1, 2, 3, 4, 5, 6, 7};
    for (std::size_t i = head; i < t.size(); ++i) {
      // A speculative round as the drafter sees it: 8 draft tokens appended and cut back, then
      // the committed token appended (as accept() does, through append()).
      const auto a = Clock::now();
      idx.append(drafted);
      idx.truncate(i);
      idx.append(std::span<const std::int32_t>(&t[i], 1));
      const auto b = Clock::now();
      round_us.push_back(micros(a, b));
      // The proposal at the new end.
      tree.clear();
      const auto c = Clock::now();
      const DraftSummary s = draft(idx, DraftParams{2, 16, 3}, 32, 16, tree, scratch);
      propose_us.push_back(micros(c, Clock::now()));
      matched += s.match_length;
    }
    std::printf("%-7s %10zu %12.3f %12.3f %12.3f %10zu %10.1f %8.2f\n", kind.c_str(), idx.size(), learn,
                median(propose_us), median(round_us), idx.node_count(),
                static_cast<double>(idx.memory_bytes()) / (1 << 20), matched / static_cast<double>(window));
  }
  return 0;
}
