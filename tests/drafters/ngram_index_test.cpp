// The n-gram drafter's index against brute force: the longest matched suffix and its followers
// (tokens, counts, latest positions) at every prefix of random and repetitive streams, and
// truncate-then-regrow against an index built from scratch on the final stream.
#include <gtest/gtest.h>

#include <string>

#include "ngram_draft.hpp"
#include "ngram_index.hpp"
#include "ngram_reference.hpp"

using graft::ngram::DraftParams;
using graft::ngram::Follower;
using graft::ngram::NgramIndex;
using namespace ngramtest;

namespace {

// The index's followers of the `len`-token suffix as a map; a repeated token is a failure.
RefFollowers index_followers(const NgramIndex& idx, std::uint32_t len, std::uint32_t& total) {
  std::vector<Follower> fs;
  total = idx.followers(len, fs);
  RefFollowers out;
  for (const Follower& f : fs) {
    EXPECT_EQ(out.count(f.token), 0u) << "token " << f.token << " listed twice";
    out[f.token] = RefFollower{f.count, f.last};
  }
  return out;
}

std::uint32_t sum_counts(const RefFollowers& fs) {
  std::uint32_t s = 0;
  for (const auto& [token, f] : fs) s += f.count;
  return s;
}

void expect_same_tree(const graft::DraftTree& got, const graft::DraftTree& want) {
  EXPECT_EQ(got.tokens, want.tokens);
  EXPECT_EQ(got.parents, want.parents);
  EXPECT_EQ(got.q, want.q);
  EXPECT_EQ(got.dist, want.dist);
  EXPECT_TRUE(got.distributions.empty());
}

// Everything observable about the index at its current length, against brute force over `t`.
void expect_matches_reference(const NgramIndex& idx, const Tokens& t, std::uint32_t min_match, bool all_lengths) {
  ASSERT_EQ(idx.size(), t.size());
  const std::uint32_t max_match = idx.max_match();
  const std::uint32_t len = idx.longest_match(min_match);
  ASSERT_EQ(len, ref_longest(t, min_match, max_match));
  for (std::uint32_t l = 1; l <= max_match; ++l) {
    if (!all_lengths && l != len) continue;
    std::uint32_t total = 0;
    const RefFollowers want = ref_followers(t, l);
    EXPECT_EQ(index_followers(idx, l, total), want) << "suffix length " << l;
    EXPECT_EQ(total, sum_counts(want)) << "suffix length " << l;
  }
  // The chosen continuation: the tree built from the index equals the one built from brute force.
  const DraftParams p{min_match, 6, 3};
  graft::DraftTree tree;
  std::vector<Follower> scratch;
  draft(idx, p, 12, 5, tree, scratch);
  expect_same_tree(tree, ref_tree(t, min_match, max_match, p.max_draft, p.max_branches, 12, 5));
}

// Grows an index token by token over `stream`, checking every prefix.
void check_every_prefix(const Tokens& stream, std::uint32_t min_match, std::uint32_t max_match, bool all_lengths) {
  NgramIndex idx(max_match);
  Tokens prefix;
  for (std::size_t i = 0; i < stream.size(); ++i) {
    idx.push_back(stream[i]);
    prefix.push_back(stream[i]);
    expect_matches_reference(idx, prefix, min_match, all_lengths);
    ASSERT_FALSE(::testing::Test::HasFailure()) << "at prefix length " << prefix.size();
  }
}

TEST(NgramIndex, MatchesBruteForceOnRandomStreams) {
  struct Case {
    std::int32_t vocab;
    std::size_t length;
    std::uint32_t min_match, max_match;
    bool all_lengths;
  };
  const Case cases[] = {
      {4, 1500, 2, 8, true},  {8, 2000, 2, 8, false},  {16, 3000, 1, 4, false},
      {4, 1200, 1, 16, true}, {5, 1500, 3, 12, false}, {2, 800, 1, 64, true},
  };
  std::uint32_t seed = 1;
  for (const Case& c : cases) {
    SCOPED_TRACE("vocab " + std::to_string(c.vocab) + " match " + std::to_string(c.min_match) + ".." +
                 std::to_string(c.max_match));
    std::mt19937 rng(seed++);
    check_every_prefix(random_stream(rng, c.length, c.vocab), c.min_match, c.max_match, c.all_lengths);
    if (HasFailure()) return;
  }
}

TEST(NgramIndex, MatchesBruteForceOnRepetitiveStreams) {
  struct Case {
    std::int32_t vocab;
    std::size_t length, motif;
    double mutation;
    std::uint32_t min_match, max_match;
  };
  const Case cases[] = {
      {50, 2000, 12, 0.05, 2, 8}, {1000, 2500, 30, 0.02, 3, 16}, {16, 1500, 7, 0.10, 1, 8}, {200, 2000, 5, 0.0, 2, 8},
  };
  std::uint32_t seed = 100;
  for (const Case& c : cases) {
    SCOPED_TRACE("motif " + std::to_string(c.motif) + " mutation " + std::to_string(c.mutation));
    std::mt19937 rng(seed++);
    check_every_prefix(repetitive_stream(rng, c.length, c.vocab, c.motif, c.mutation), c.min_match, c.max_match,
                       true);
    if (HasFailure()) return;
  }
}

TEST(NgramIndex, OneRepeatedToken) {
  // Every suffix matches, with one follower whose count grows: the deepest chains in the trie.
  const Tokens t(600, 7);
  check_every_prefix(t, 2, 8, true);
  NgramIndex idx(8);
  idx.append(t);
  std::vector<Follower> fs;
  EXPECT_EQ(idx.longest_match(2), 8u);
  EXPECT_EQ(idx.followers(8, fs), 600u - 8u);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(fs[0].last, 599u);  // the pending token itself follows the previous occurrence
}

TEST(NgramIndex, ShortSequences) {
  NgramIndex idx(4);
  std::vector<Follower> fs;
  EXPECT_EQ(idx.longest_match(1), 0u);
  EXPECT_EQ(idx.followers(1, fs), 0u);
  idx.push_back(3);
  EXPECT_EQ(idx.longest_match(1), 0u);
  EXPECT_EQ(idx.followers(4, fs), 0u);  // longer than the sequence
  idx.push_back(3);
  EXPECT_EQ(idx.longest_match(1), 1u);
  EXPECT_EQ(idx.longest_match(2), 0u);
  EXPECT_EQ(idx.followers(5, fs), 0u);  // longer than max_match
  EXPECT_THROW(NgramIndex(0), std::invalid_argument);
}

// The index's state, through everything it answers, equals another's.
void expect_same_state(const NgramIndex& a, const NgramIndex& b) {
  ASSERT_EQ(a.size(), b.size());
  ASSERT_TRUE(std::equal(a.tokens().begin(), a.tokens().end(), b.tokens().begin()));
  EXPECT_EQ(a.node_count(), b.node_count());
  for (std::uint32_t min_match = 1; min_match <= a.max_match(); ++min_match)
    EXPECT_EQ(a.longest_match(min_match), b.longest_match(min_match));
  for (std::uint32_t l = 1; l <= a.max_match(); ++l) {
    std::uint32_t ta = 0, tb = 0;
    EXPECT_EQ(index_followers(a, l, ta), index_followers(b, l, tb)) << "suffix length " << l;
    EXPECT_EQ(ta, tb);
  }
}

TEST(NgramIndex, TruncateThenRegrowEqualsFromScratch) {
  for (std::uint32_t seed = 0; seed < 12; ++seed) {
    std::mt19937 rng(seed);
    const std::int32_t vocab = 3 + static_cast<std::int32_t>(seed % 6);
    const Tokens a = seed % 2 ? random_stream(rng, 600 + 97 * seed, vocab)
                              : repetitive_stream(rng, 600 + 97 * seed, vocab, 9, 0.05);
    const std::size_t m = a.size();
    // Cuts that rebuild (fewer kept than removed), that undo, and the edges.
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, m / 3, m / 2, m * 3 / 4, m - 1, m, m + 5}) {
      SCOPED_TRACE("seed " + std::to_string(seed) + " cut " + std::to_string(cut));
      NgramIndex idx(8);
      idx.append(a);
      idx.truncate(cut);
      const std::size_t kept = std::min(cut, m);
      Tokens final_stream(a.begin(), a.begin() + static_cast<std::ptrdiff_t>(kept));
      NgramIndex fresh(8);
      fresh.append(final_stream);
      expect_same_state(idx, fresh);
      // Regrow with other tokens: the first one differs from what was cut.
      Tokens b = repetitive_stream(rng, 300, vocab, 5, 0.1);
      if (kept < m && b[0] == a[kept]) b[0] = (b[0] + 1) % vocab;
      for (std::int32_t t : b) {
        idx.push_back(t);
        fresh.push_back(t);
        final_stream.push_back(t);
        expect_same_state(idx, fresh);
        ASSERT_FALSE(HasFailure()) << "after regrowing to " << idx.size();
      }
      expect_matches_reference(idx, final_stream, 2, true);
      if (HasFailure()) return;
    }
  }
}

TEST(NgramIndex, SpeculativeRoundsLeaveNoTrace) {
  // Each round appends a wrong draft, cuts it back and appends the true tokens, as an engine that
  // fed drafts to the index would; the index must equal one that only saw the true stream.
  std::mt19937 rng(77);
  const Tokens truth = repetitive_stream(rng, 3000, 40, 11, 0.05);
  std::uniform_int_distribution<std::size_t> step(1, 9);
  std::uniform_int_distribution<std::int32_t> tok(0, 39);
  NgramIndex idx(12), fresh(12);
  std::size_t n = 0;
  while (n < truth.size()) {
    const std::size_t k = std::min(step(rng), truth.size() - n);
    const std::size_t wrong = step(rng);
    for (std::size_t i = 0; i < wrong; ++i) idx.push_back(tok(rng));
    idx.truncate(n);
    for (std::size_t i = 0; i < k; ++i) {
      idx.push_back(truth[n + i]);
      fresh.push_back(truth[n + i]);
    }
    n += k;
    expect_same_state(idx, fresh);
    ASSERT_FALSE(HasFailure()) << "at length " << n;
  }
  idx.truncate(0);
  EXPECT_EQ(idx.size(), 0u);
  EXPECT_EQ(idx.node_count(), 1u);  // the root alone
  EXPECT_EQ(idx.longest_match(1), 0u);
}

TEST(NgramIndex, ManyTruncationsOfOneIndex) {
  // One index through many cuts and regrowths (the hash table's deletions pile up), checked
  // against brute force after each.
  std::mt19937 rng(5);
  NgramIndex idx(6);
  Tokens t;
  for (int round = 0; round < 60; ++round) {
    const Tokens more = random_stream(rng, 20 + rng() % 200, 5);
    idx.append(more);
    t.insert(t.end(), more.begin(), more.end());
    // Mostly short cuts (speculative rounds), sometimes anywhere.
    const std::size_t cut =
        round % 4 == 0 ? rng() % (t.size() + 1) : t.size() - rng() % std::min<std::size_t>(t.size() + 1, 40);
    idx.truncate(cut);
    t.resize(std::min(cut, t.size()));
    expect_matches_reference(idx, t, 1, true);
    ASSERT_FALSE(HasFailure()) << "round " << round;
  }
}

}  // namespace
