// The speculative decoder in phases, as the server drives it (core/speculative/speculative_decoder.hpp):
// - a sequence cut back in the middle (a committed token replaced: a forced end of thinking) and a
//   new prompt resuming on the prefix a sequence already holds (the agent loop) go on exactly as
//   plain greedy decoding of the same tokens, with every drafter (ngram, mtp, dflash2) still in
//   step (none fails, drafts are still accepted);
// - two sequences whose rounds and prompt pieces share ONE forward pass (run_planned) each give
//   their own plain greedy continuation.
#include "sampling/sampler.hpp"
#include "zoo_test_util.hpp"

using namespace zoo;

namespace {

const fs::path kDFlash = kRoot / "models" / "zoo-dflash2-2x256.gguf";

std::unique_ptr<Drafters> all_three(const Pipeline& p) {
  Config dflash;
  dflash.set("model", kDFlash.string());
  // Not adaptive: every proposal verified, so rounds accept part of their drafts (the cut then
  // lands inside what a round committed).
  return drafters(p, {drafter("ngram"), drafter("mtp"), drafter("dflash2", dflash)}, 16, 8, /*adaptive=*/false);
}

// Plain greedy decoding after `committed` with `pending` emitted: the next n tokens.
std::vector<TokenId> plain_after(const Pipeline& p, std::span<const TokenId> committed, TokenId pending, std::size_t n) {
  auto s = p.new_session();
  EXPECT_TRUE(s);
  if (!s) return {};
  std::vector<TokenId> seq(committed.begin(), committed.end());
  seq.push_back(pending);
  EXPECT_TRUE((*s)->append(seq).ok());
  Sampler sampler(greedy());
  std::vector<TokenId> out;
  while (out.size() < n) {
    out.push_back(sampler.sample((*s)->logits(), (*s)->tokens()));
    if (out.size() < n) {
      EXPECT_TRUE((*s)->append(std::span(&out.back(), 1)).ok());
    }
  }
  return out;
}

// Rounds of decoder.step from `pending` until n tokens came; returns them (the last is pending).
std::vector<TokenId> rounds(SpeculativeDecoder& d, Session& s, TokenId pending, std::size_t n) {
  Sampler sampler(greedy());
  std::vector<TokenId> got;
  while (got.size() < n) {
    std::vector<TokenId> out;
    const Status st = d.step(s, sampler, pending, static_cast<std::uint32_t>(std::min<std::size_t>(s.room(), n - got.size())), out);
    EXPECT_TRUE(st.ok()) << st.message();
    if (!st.ok() || out.empty()) break;
    got.insert(got.end(), out.begin(), out.end());
    pending = out.back();
  }
  return got;
}

std::uint64_t failures(const SpeculativeDecoder& d) {
  std::uint64_t f = 0;
  for (const DrafterStats& s : d.stats().drafters) f += s.failures;
  return f;
}

}  // namespace

TEST(Phases, ACutBackAndAResumedPrefixStayLosslessWithEveryDrafter) {
  auto p = pipeline("", "f32", nullptr, 1024);
  ASSERT_TRUE(p);
  auto set = all_three(*p);
  ASSERT_TRUE(set);
  auto made = set->new_decoder();
  ASSERT_TRUE(made);
  SpeculativeDecoder& d = **made;
  const auto prompts = corpus();
  const auto prompt = tokenize(*p, prompts[3].second);
  auto sp = p->new_session();
  ASSERT_TRUE(sp);
  Session& s = **sp;
  ASSERT_TRUE(d.prefill(s, prompt).ok());
  Sampler first(greedy());
  const TokenId t0 = first.sample(s.logits(), s.tokens());
  const std::vector<TokenId> a = rounds(d, s, t0, 60);
  ASSERT_EQ(a.size(), 60u);
  EXPECT_EQ(a, plain_after(*p, prompt, t0, 60));

  // Cut back inside what the last rounds committed (the drafters' queued entries), then a token of
  // our choosing is pending instead: the continuation is plain decoding's of that sequence.
  for (const std::uint32_t back : {2u, 40u}) {  // 40: entries the mtp head has already run
    const std::uint32_t cut = static_cast<std::uint32_t>(s.tokens().size()) - back;
    ASSERT_TRUE(d.truncate(s, cut).ok());
    ASSERT_EQ(s.tokens().size(), cut);
    const TokenId forced = 13;
    const std::vector<TokenId> committed(s.tokens().begin(), s.tokens().end());
    const std::uint64_t accepted_before = d.stats().accepted;
    const std::vector<TokenId> b = rounds(d, s, forced, 60);
    EXPECT_EQ(b, plain_after(*p, committed, forced, 60)) << "cut back " << back;
    EXPECT_GT(d.stats().accepted, accepted_before) << "the drafters still draft after a cut of " << back;
  }

  // A new prompt extending the first 100 tokens the sequence holds keeps them (prefills the rest).
  std::vector<TokenId> next(s.tokens().begin(), s.tokens().begin() + 100);
  for (TokenId t : tokenize(*p, "\n# and now something else entirely\n")) next.push_back(t);
  ASSERT_NE(s.tokens()[100], next[100]);
  const auto started = d.start(s, next, std::numeric_limits<std::uint32_t>::max());
  ASSERT_TRUE(started) << started.status().message();
  const std::uint32_t kept = *started;
  EXPECT_EQ(kept, 100u);
  while (d.prefilling()) {
    ASSERT_TRUE(d.plan_prefill(s, 16).ok());  // pieces of 16 rows
    const PlannedSequence one{&d, &s};
    ForwardOutput out;
    std::vector<PassPart> parts;
    ASSERT_TRUE(run_planned(s.workspace(), std::span(&one, 1), out, parts).ok());
    ASSERT_TRUE(d.finish_prefill(s, parts[0]).ok());
  }
  ASSERT_EQ(std::vector<TokenId>(s.tokens().begin(), s.tokens().end()), next);
  Sampler again(greedy());
  const TokenId t1 = again.sample(s.logits(), s.tokens());
  const std::vector<TokenId> c = rounds(d, s, t1, 60);
  const Generated plain = generate(*p, next, greedy(), 61, nullptr);
  ASSERT_EQ(plain.ids.size(), 61u);
  EXPECT_EQ(t1, plain.ids[0]);
  EXPECT_EQ(c, std::vector<TokenId>(plain.ids.begin() + 1, plain.ids.end()));
  EXPECT_EQ(failures(d), 0u) << "no drafter failed (none was disabled) through the cuts and the resume";
}

TEST(Phases, TwoSequencesSharingEachPassEqualTheirOwnPlainGreedy) {
  auto p = pipeline("", "f32", nullptr, 1024);
  ASSERT_TRUE(p);
  auto set = all_three(*p);
  ASSERT_TRUE(set);
  const auto prompts = corpus();
  const std::vector<TokenId> prompt_a = tokenize(*p, prompts[0].second), prompt_b = tokenize(*p, prompts[20].second);
  auto made_a = set->new_decoder(), made_b = set->new_decoder();
  ASSERT_TRUE(made_a && made_b);
  SpeculativeDecoder* da = made_a->get();
  SpeculativeDecoder* db = made_b->get();
  auto sa = p->new_session(), sb = p->new_session();
  ASSERT_TRUE(sa && sb);
  Session &a = **sa, &b = **sb;
  ASSERT_TRUE(da->start(a, prompt_a, 0));
  ASSERT_TRUE(db->start(b, prompt_b, 0));
  Sampler sample_a(greedy()), sample_b(greedy());
  std::vector<TokenId> got_a, got_b;
  TokenId pending_a = 0, pending_b = 0;
  std::size_t shared = 0;
  ForwardOutput out;
  std::vector<PassPart> parts;
  // Sequence a's prompt goes in whole, then it decodes while b's prompt goes in 8 rows a pass.
  while (got_a.size() < 48 || got_b.size() < 48) {
    std::vector<PlannedSequence> seqs;
    const bool a_decoding = !da->prefilling(), b_decoding = !db->prefilling();
    if (got_a.size() < 48) {
      ASSERT_TRUE((a_decoding ? da->plan_step(a, sample_a, pending_a, 48 - got_a.size(), 32) : da->plan_prefill(a, 256)).ok());
      seqs.push_back({da, &a});
    }
    if (got_b.size() < 48 && (a_decoding || got_a.size() >= 48)) {
      ASSERT_TRUE((b_decoding ? db->plan_step(b, sample_b, pending_b, 48 - got_b.size(), 32) : db->plan_prefill(b, 8)).ok());
      seqs.push_back({db, &b});
    }
    ASSERT_TRUE(run_planned(a.workspace(), seqs, out, parts).ok());
    shared += seqs.size() == 2 ? 1 : 0;
    for (std::size_t k = 0; k < seqs.size(); ++k) {
      const bool is_a = seqs[k].decoder == da;
      SpeculativeDecoder& d = is_a ? *da : *db;
      Session& s = is_a ? a : b;
      Sampler& sampler = is_a ? sample_a : sample_b;
      std::vector<TokenId>& got = is_a ? got_a : got_b;
      TokenId& pending = is_a ? pending_a : pending_b;
      if (is_a ? !a_decoding : !b_decoding) {
        ASSERT_TRUE(d.finish_prefill(s, parts[k]).ok());
        if (!d.prefilling()) got.push_back(pending = sampler.sample(s.logits(), s.tokens()));
        continue;
      }
      std::vector<TokenId> round;
      ASSERT_TRUE(d.finish_step(s, sampler, parts[k], round).ok());
      got.insert(got.end(), round.begin(), round.end());
      pending = round.back();
    }
  }
  EXPECT_GE(shared, 5u) << "passes carried both sequences";
  EXPECT_EQ(got_a, generate(*p, prompt_a, greedy(), 48, nullptr).ids);
  EXPECT_EQ(got_b, generate(*p, prompt_b, greedy(), 48, nullptr).ids);
  EXPECT_GT(da->stats().accepted + db->stats().accepted, 20u) << "drafts were accepted in shared passes";
  EXPECT_EQ(failures(*da) + failures(*db), 0u);
}
