// Several sequences over one Model: interleaved sessions, one forward pass over several
// sessions' rows, a token tree verified in one pass and compacted to one path, the optional
// outputs (chosen logit rows, hidden-state taps). Every comparison is bit for bit against a
// session run alone, since each row's result must not depend on what else is in its batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <set>
#include <thread>

#include "engine/pipeline.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

constexpr std::uint32_t kVocab = 600;

std::vector<TokenId> tokens_of(std::size_t n, std::uint32_t salt) {
  std::vector<TokenId> t(n);
  for (std::size_t i = 0; i < n; ++i) t[i] = static_cast<TokenId>((i * 7919 + salt * 104729 + 13) % kVocab);
  return t;
}

TokenId argmax(const std::vector<float>& logits, std::size_t row = 0) {
  const float* l = logits.data() + row * kVocab;
  return static_cast<TokenId>(std::max_element(l, l + kVocab) - l);
}

// Memcmp, so -0.0 against 0.0 or two NaNs with other payloads count as different.
bool same_bits(const float* a, const float* b, std::size_t n) { return std::memcmp(a, b, n * sizeof(float)) == 0; }

// KV element type (f32, f16) and threads.
struct Case {
  const char* kv_type;
  int threads;
};

class SessionTest : public ::testing::TestWithParam<Case> {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->path() / "m.gguf";
    auto r = run_command(std::string(GRAFT_EXE) +
                         " synth --arch qwen3 --n-embd 128 --n-layer 3 --n-head 4 --n-head-kv 2 --n-ff 256 "
                         "--n-vocab 600 --seed 11 --out " +
                         model_.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() {
    delete dir_;
    dir_ = nullptr;
  }

  void SetUp() override {
    Profile profile = Profile::builtin();
    profile.model = model_;
    profile.context = 128;
    profile.threads = GetParam().threads;
    profile.kv.config.set("type", std::string(GetParam().kv_type));
    auto p = Pipeline::build(profile, 32);
    ASSERT_TRUE(p) << p.status().message();
    p_ = std::move(*p);
  }

  std::unique_ptr<Session> session() {
    auto s = p_->new_session();
    EXPECT_TRUE(s) << s.status().message();
    return s ? std::move(*s) : nullptr;
  }

  // A lone session: the prompt, then `steps` greedy tokens; the logits after each append.
  std::vector<std::vector<float>> lone_run(const std::vector<TokenId>& prompt, int steps) {
    auto s = session();
    std::vector<std::vector<float>> out;
    if (!s) return out;
    EXPECT_TRUE(s->append(prompt).ok());
    out.push_back(s->logits());
    for (int i = 0; i < steps; ++i) {
      const TokenId next = argmax(s->logits());
      EXPECT_TRUE(s->append(std::span<const TokenId>(&next, 1)).ok());
      out.push_back(s->logits());
    }
    return out;
  }

  static TempDir* dir_;
  static std::filesystem::path model_;
  std::unique_ptr<Pipeline> p_;
};

TempDir* SessionTest::dir_ = nullptr;
std::filesystem::path SessionTest::model_;

}  // namespace

TEST_P(SessionTest, InterleavedSessionsEachMatchALoneRun) {
  const auto pa = tokens_of(9, 1), pb = tokens_of(5, 2);
  const int steps = 6;
  const auto want_a = lone_run(pa, steps), want_b = lone_run(pb, steps);
  ASSERT_EQ(want_a.size(), std::size_t(steps + 1));
  EXPECT_FALSE(same_bits(want_a[0].data(), want_b[0].data(), kVocab)) << "the two prompts must differ";

  auto a = session(), b = session();
  ASSERT_TRUE(a && b);
  EXPECT_EQ(&a->model(), &b->model()) << "sessions share one Model";
  EXPECT_NE(&a->kv(), &b->kv());
  ASSERT_TRUE(a->append(pa).ok());
  ASSERT_TRUE(b->append(pb).ok());
  for (int i = 0; i <= steps; ++i) {
    ASSERT_TRUE(same_bits(a->logits().data(), want_a[i].data(), kVocab)) << "session a, step " << i;
    ASSERT_TRUE(same_bits(b->logits().data(), want_b[i].data(), kVocab)) << "session b, step " << i;
    if (i == steps) break;
    for (Session* s : {b.get(), a.get()}) {  // b first: the order must not matter
      const TokenId next = argmax(s->logits());
      ASSERT_TRUE(s->append(std::span<const TokenId>(&next, 1)).ok());
    }
  }
  EXPECT_EQ(a->tokens().size(), pa.size() + steps);
  EXPECT_EQ(a->kv().size(), pa.size() + steps);
  EXPECT_EQ(b->kv().size(), pb.size() + steps);
}

// Greedy decode steps that hand back the id alone equal steps that hand back the logits and take
// their argmax on the host; a step with no room left fails as append() does and commits nothing.
TEST_P(SessionTest, GreedyIdStepsEqualTheArgmaxOfLogitSteps) {
  const auto prompt = tokens_of(9, 5);
  const auto want = lone_run(prompt, 12);
  auto s = session();
  ASSERT_TRUE(s && s->append(prompt).ok());
  TokenId next = argmax(s->logits());
  for (int i = 1; i <= 12; ++i) {
    auto id = s->decode_argmax(next);
    ASSERT_TRUE(id) << id.status().message();
    EXPECT_TRUE(s->logits().empty());
    EXPECT_EQ(*id, argmax(want[static_cast<std::size_t>(i)])) << "step " << i;
    next = *id;
  }
  EXPECT_EQ(s->tokens().size(), prompt.size() + 12);
  // A full context: the same refusal as append's, nothing committed.
  auto full = session();
  ASSERT_TRUE(full);
  const auto fill = tokens_of(full->capacity(), 6);
  ASSERT_TRUE(full->append(fill).ok());
  const TokenId one = 1;
  const std::string refused = full->append(std::span<const TokenId>(&one, 1)).message();
  EXPECT_FALSE(refused.empty());
  auto id = full->decode_argmax(one);
  ASSERT_FALSE(id);
  EXPECT_EQ(id.status().message(), refused);
  EXPECT_EQ(full->tokens().size(), full->capacity());
}

// The k best of a row of logits, best first (the larger, the lower id among equal ones).
std::vector<TokenId> best_of(const std::vector<float>& logits, std::size_t k) {
  std::vector<TokenId> order(logits.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<TokenId>(i);
  std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) {
    return logits[static_cast<std::size_t>(a)] > logits[static_cast<std::size_t>(b)];
  });
  order.resize(k);
  return order;
}

// Sampled decode steps that hand back a top_k chain's candidates alone equal steps that hand back
// the logits: the candidates are the row's k best (ids, and logits bit for bit), the sampler draws
// the same tokens from them, and so does generate() (PlainDecoder reads candidates) against a loop
// over whole rows. A step with no room fails as append() does.
TEST_P(SessionTest, SampledCandidateStepsEqualSamplingTheirLogits) {
  SamplingSettings settings;  // the defaults: temperature 0.8, top_k 40, top_p 0.95, min_p 0.05
  settings.seed = 21;
  settings.repeat_penalty = 1.0;
  settings.presence_penalty = 0.0;
  const auto prompt = tokens_of(9, 7);
  auto a = session(), b = session();
  ASSERT_TRUE(a && b && a->append(prompt).ok() && b->append(prompt).ok());
  Sampler by_candidates(settings), by_logits(settings);
  const std::uint32_t k = candidates_for(by_candidates, a->model());
  ASSERT_EQ(k, 40u);
  TokenId next = by_logits.sample(b->logits(), b->tokens());
  ASSERT_EQ(by_candidates.sample(a->logits(), a->tokens()), next);
  std::vector<TokenId> drawn;
  for (int i = 0; i < 16; ++i) {
    ASSERT_TRUE(a->decode_candidates(next, k).ok());
    ASSERT_TRUE(b->append(std::span<const TokenId>(&next, 1)).ok());
    EXPECT_TRUE(a->logits().empty());
    const auto want = best_of(b->logits(), k);
    ASSERT_EQ(std::vector<TokenId>(a->candidate_ids().begin(), a->candidate_ids().end()), want) << "step " << i;
    for (std::size_t j = 0; j < k; ++j)
      ASSERT_TRUE(same_bits(&a->candidate_logits()[j], &b->logits()[static_cast<std::size_t>(want[j])], 1));
    next = by_logits.sample(b->logits(), b->tokens());
    ASSERT_EQ(by_candidates.sample_candidates(a->candidate_ids(), a->candidate_logits()), next) << "step " << i;
    drawn.push_back(next);
  }
  EXPECT_GT(std::set<TokenId>(drawn.begin(), drawn.end()).size(), 1u) << "sampling should not be constant here";
  // generate() against the same loop over whole rows.
  GenerationOptions options;
  options.sampling = settings;
  options.max_tokens = 12;
  auto g = session(), l = session();
  ASSERT_TRUE(g && l);
  std::vector<TokenId> generated;
  GenerationStats stats;
  ASSERT_TRUE(g->generate(prompt, options, [&](TokenId id, std::string_view) { generated.push_back(id); return true; },
                          stats)
                  .ok());
  ASSERT_TRUE(l->append(prompt).ok());
  Sampler loop(settings);
  std::vector<TokenId> looped;
  for (std::size_t i = 0; i < generated.size(); ++i) {
    looped.push_back(loop.sample(l->logits(), l->tokens()));
    ASSERT_TRUE(l->append(std::span<const TokenId>(&looped.back(), 1)).ok());
  }
  EXPECT_EQ(generated, looped);
  // A full context: append's refusal, nothing committed.
  auto full = session();
  ASSERT_TRUE(full);
  ASSERT_TRUE(full->append(tokens_of(full->capacity(), 6)).ok());
  const TokenId one = 1;
  const std::string refused = full->append(std::span<const TokenId>(&one, 1)).message();
  EXPECT_EQ(full->decode_candidates(one, k).message(), refused);
  EXPECT_EQ(full->tokens().size(), full->capacity());
}

// One pass over sessions that each want something else after their token: logits, the greedy id,
// 40 candidates, 5 candidates (the first 5 of the pass's 40 per row): each what its own step gives.
TEST_P(SessionTest, OnePassHandsEachSessionWhatItAskedFor) {
  std::vector<std::unique_ptr<Session>> together, alone;
  for (int i = 0; i < 4; ++i) {
    together.push_back(session());
    alone.push_back(session());
    ASSERT_TRUE(together.back() && alone.back());
    const auto prompt = tokens_of(5 + static_cast<std::size_t>(i), 30 + static_cast<std::uint32_t>(i));
    ASSERT_TRUE(together.back()->append(prompt).ok() && alone.back()->append(prompt).ok());
  }
  const TokenId token = 17;
  TokenId greedy = -1;
  std::vector<SessionStep> steps{{together[0].get(), std::span(&token, 1)},
                                 {together[1].get(), std::span(&token, 1), &greedy},
                                 {together[2].get(), std::span(&token, 1), nullptr, 40},
                                 {together[3].get(), std::span(&token, 1), nullptr, 5}};
  ASSERT_TRUE(Session::append_together(together[0]->workspace(), steps).ok());
  for (auto& s : alone) ASSERT_TRUE(s->append(std::span(&token, 1)).ok());
  ASSERT_TRUE(same_bits(together[0]->logits().data(), alone[0]->logits().data(), kVocab));
  EXPECT_TRUE(together[0]->candidate_ids().empty());
  EXPECT_EQ(greedy, argmax(alone[1]->logits()));
  EXPECT_TRUE(together[1]->logits().empty());
  for (int i : {2, 3}) {
    const std::size_t k = i == 2 ? 40 : 5;
    const std::vector<float>& row = alone[static_cast<std::size_t>(i)]->logits();
    const auto want = best_of(row, k);
    const Session& s = *together[static_cast<std::size_t>(i)];
    EXPECT_TRUE(s.logits().empty());
    ASSERT_EQ(std::vector<TokenId>(s.candidate_ids().begin(), s.candidate_ids().end()), want) << "session " << i;
    ASSERT_EQ(s.candidate_logits().size(), k);
    for (std::size_t j = 0; j < k; ++j)
      EXPECT_EQ(s.candidate_logits()[j], row[static_cast<std::size_t>(want[j])]);
  }
}

// Sessions driven from two host threads at once (the server's case before batching): the
// backend, the format kernels and the Model are shared; each session's results stay its own.
TEST_P(SessionTest, SessionsOnTwoThreadsAtOnceEachMatchALoneRun) {
  const auto pa = tokens_of(12, 11), pb = tokens_of(6, 12);
  const int steps = 8;
  const auto want_a = lone_run(pa, steps), want_b = lone_run(pb, steps);
  std::vector<std::vector<float>> got_a, got_b;
  auto a = session(), b = session();
  ASSERT_TRUE(a && b);
  auto drive = [&](Session& s, const std::vector<TokenId>& prompt, std::vector<std::vector<float>>& got) {
    if (!s.append(prompt).ok()) return;
    got.push_back(s.logits());
    for (int i = 0; i < steps; ++i) {
      const TokenId next = argmax(s.logits());
      if (!s.append(std::span<const TokenId>(&next, 1)).ok()) return;
      got.push_back(s.logits());
    }
  };
  std::thread ta([&] { drive(*a, pa, got_a); }), tb([&] { drive(*b, pb, got_b); });
  ta.join();
  tb.join();
  ASSERT_EQ(got_a.size(), want_a.size());
  ASSERT_EQ(got_b.size(), want_b.size());
  for (std::size_t i = 0; i < want_a.size(); ++i) {
    EXPECT_TRUE(same_bits(got_a[i].data(), want_a[i].data(), kVocab)) << "a, step " << i;
    EXPECT_TRUE(same_bits(got_b[i].data(), want_b[i].data(), kVocab)) << "b, step " << i;
  }
}

TEST_P(SessionTest, OneForwardPassOverSeveralSessionsMatchesLoneRuns) {
  const auto pa = tokens_of(7, 3), pb = tokens_of(11, 4), pc = tokens_of(4, 5);
  const int steps = 4;
  const auto want_a = lone_run(pa, steps), want_b = lone_run(pb, steps), want_c = lone_run(pc, steps);

  auto a = session(), b = session(), c = session();
  ASSERT_TRUE(a && b && c);
  auto ws = p_->model().new_workspace(32);
  ASSERT_TRUE(ws) << ws.status().message();
  // a's prompt alone first; then one pass holding a's next token (decode), b's and c's whole prompts
  // (prefill); then passes where all three decode together.
  ASSERT_TRUE(a->append(pa).ok());
  TokenId next_a = argmax(a->logits());
  const SessionStep first[] = {{a.get(), std::span<const TokenId>(&next_a, 1)}, {b.get(), pb}, {c.get(), pc}};
  Status st = Session::append_together(**ws, first);
  ASSERT_TRUE(st.ok()) << st.message();
  EXPECT_TRUE(same_bits(a->logits().data(), want_a[1].data(), kVocab));
  EXPECT_TRUE(same_bits(b->logits().data(), want_b[0].data(), kVocab));
  EXPECT_TRUE(same_bits(c->logits().data(), want_c[0].data(), kVocab));
  for (int i = 1; i < steps; ++i) {
    TokenId na = argmax(a->logits()), nb = argmax(b->logits()), nc = argmax(c->logits());
    const SessionStep all[] = {{c.get(), std::span<const TokenId>(&nc, 1)},
                               {a.get(), std::span<const TokenId>(&na, 1)},
                               {b.get(), std::span<const TokenId>(&nb, 1)}};
    ASSERT_TRUE(Session::append_together(**ws, all).ok());
    ASSERT_TRUE(same_bits(a->logits().data(), want_a[i + 1].data(), kVocab)) << "a, step " << i;
    ASSERT_TRUE(same_bits(b->logits().data(), want_b[i].data(), kVocab)) << "b, step " << i;
    ASSERT_TRUE(same_bits(c->logits().data(), want_c[i].data(), kVocab)) << "c, step " << i;
  }
  EXPECT_EQ(a->tokens().size(), pa.size() + steps);
  EXPECT_EQ(b->tokens().size(), pb.size() + steps - 1);
}

TEST_P(SessionTest, BatchErrorsLeaveEverySessionAsItWas) {
  auto a = session(), b = session();
  ASSERT_TRUE(a && b);
  ASSERT_TRUE(a->append(tokens_of(5, 6)).ok());
  auto ws = p_->model().new_workspace(4);
  ASSERT_TRUE(ws);
  const auto long_prompt = tokens_of(6, 7);
  const TokenId one = 3;
  const SessionStep steps[] = {{a.get(), std::span<const TokenId>(&one, 1)}, {b.get(), long_prompt}};
  Status st = Session::append_together(**ws, steps);
  EXPECT_EQ(st.message(), "forward: 7 tokens exceed the batch size 4");
  EXPECT_EQ(a->tokens().size(), 5u);
  EXPECT_EQ(a->kv().size(), 5u);
  EXPECT_EQ(b->kv().size(), 0u);
  const SessionStep twice[] = {{a.get(), std::span<const TokenId>(&one, 1)}, {a.get(), std::span<const TokenId>(&one, 1)}};
  EXPECT_EQ(Session::append_together(**ws, twice).message(), "append_together: a session appears twice");
}

// A KV store that fails on command: a write (the pass fails midway, after earlier layers wrote
// their rows) and then the truncate that cuts those rows back.
class FlakyKv final : public KvStore {
 public:
  explicit FlakyKv(std::shared_ptr<KvStore> inner) : inner_(std::move(inner)) {}
  bool fail_write_layer1 = false, fail_truncate = false;
  KvGeometry geometry() const noexcept override { return inner_->geometry(); }
  std::uint32_t size() const noexcept override { return inner_->size(); }
  bool lossless() const noexcept override { return inner_->lossless(); }
  KvMemory memory() const noexcept override { return inner_->memory(); }
  Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k, const TensorView& v) override {
    if (fail_write_layer1 && layer == 1) return Status(Errc::internal, "flaky store: write failed");
    return inner_->write(layer, slot, n, k, v);
  }
  Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& b, const TensorView& out) override {
    return inner_->attend(layer, q, b, out);
  }
  Status truncate(std::uint32_t n) override {
    if (fail_truncate && n > 0) return Status(Errc::internal, "flaky store: truncate failed");
    return inner_->truncate(n);
  }
  Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) override { return inner_->compact(dst, src); }

 private:
  std::shared_ptr<KvStore> inner_;
};

// A pass that fails midway leaves the sequence as it was (the rows it wrote cut back); when even
// that cut fails, the error says so and the sequence is emptied, never left disagreeing with its
// store.
TEST_P(SessionTest, AFailedPassIsCutBackAndAFailedCutIsReportedNotDropped) {
  auto inner = p_->new_kv_store(p_->model().kv_geometry(128));
  ASSERT_TRUE(inner) << inner.status().message();
  auto flaky = std::make_shared<FlakyKv>(std::move(*inner));
  auto s = Session::create(p_->shared_model(), flaky, SessionOptions{});
  ASSERT_TRUE(s) << s.status().message();
  Session& session = **s;
  ASSERT_TRUE(session.append(tokens_of(3, 6)).ok());
  flaky->fail_write_layer1 = true;
  Status st = session.append(tokens_of(2, 9));
  EXPECT_EQ(st.message(), "flaky store: write failed");
  EXPECT_EQ(session.tokens().size(), 3u);
  EXPECT_EQ(session.kv().size(), 3u);
  flaky->fail_truncate = true;
  st = session.append(tokens_of(2, 9));
  EXPECT_EQ(st.message(), "flaky store: write failed; then the KV store could not be cut back to the 3 committed tokens "
                          "(flaky store: truncate failed), so the sequence was emptied");
  EXPECT_EQ(session.tokens().size(), 0u);
  EXPECT_EQ(session.kv().size(), 0u);
}

// A token tree (the shape speculative verification sends) forwarded in one pass with positions
// n_past + depth and the ancestor mask, then the KV compacted to one root-to-leaf path: the
// path's logits and everything after equal decoding that path token by token.
TEST_P(SessionTest, TokenTreeCompactedToOnePathEqualsSequentialDecoding) {
  const auto prompt = tokens_of(8, 8);
  // Tree nodes (token, parent): 0 and 4 are children of the last committed token.
  //   0 ─┬─ 1
  //      └─ 2 ── 3 ── 5
  //   4
  const std::vector<TokenId> tree = {101, 202, 303, 404, 505, 506};
  const std::vector<int> parent = {-1, 0, 0, 2, -1, 3};
  const std::vector<std::uint32_t> path = {0, 2, 3, 5};
  const std::size_t n = tree.size();
  std::vector<std::int32_t> depth(n);
  std::vector<std::uint8_t> ancestor(n * n, 0);
  for (std::size_t i = 0; i < n; ++i) {
    depth[i] = parent[i] < 0 ? 0 : depth[parent[i]] + 1;
    for (int j = static_cast<int>(i); j >= 0; j = parent[j]) ancestor[i * n + j] = 1;
  }

  // Sequential: the prompt, then the path's tokens one by one, then one more token.
  const TokenId after = 77;
  auto seq = session();
  ASSERT_TRUE(seq);
  ASSERT_TRUE(seq->append(prompt).ok());
  std::vector<std::vector<float>> want;
  for (std::uint32_t node : path) {
    ASSERT_TRUE(seq->append(std::span<const TokenId>(&tree[node], 1)).ok());
    want.push_back(seq->logits());
  }
  ASSERT_TRUE(seq->append(std::span<const TokenId>(&after, 1)).ok());
  const std::vector<float> want_after = seq->logits();

  // The tree in one pass.
  auto s = session();
  ASSERT_TRUE(s);
  ASSERT_TRUE(s->append(prompt).ok());
  const auto n_past = static_cast<std::uint32_t>(prompt.size());
  std::vector<std::int32_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = static_cast<std::int32_t>(n_past) + depth[i];
  SequenceBatch verify;
  verify.tokens = tree;
  verify.positions = positions;
  verify.n_past = n_past;
  verify.ancestor = ancestor.data();
  verify.all_logits = true;
  std::vector<float> logits;
  Status st = s->forward(verify, logits);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(logits.size(), n * kVocab);
  for (std::size_t k = 0; k < path.size(); ++k)
    EXPECT_TRUE(same_bits(logits.data() + path[k] * kVocab, want[k].data(), kVocab)) << "path node " << path[k];
  // A node off the path sees other ancestors: its logits must differ from the path's at its depth.
  EXPECT_FALSE(same_bits(logits.data() + 1 * kVocab, want[1].data(), kVocab));

  // Keep the path's K/V, in order, right after the prompt; then continue as the sequential run did.
  std::vector<std::uint32_t> src;
  for (std::uint32_t node : path) src.push_back(n_past + node);
  ASSERT_TRUE(s->kv().compact(n_past, src).ok());
  EXPECT_EQ(s->kv().size(), n_past + path.size());
  SequenceBatch next;
  next.tokens = std::span<const TokenId>(&after, 1);
  next.n_past = n_past + static_cast<std::uint32_t>(path.size());
  ASSERT_TRUE(s->forward(next, logits).ok());
  EXPECT_TRUE(same_bits(logits.data(), want_after.data(), kVocab)) << "the logits after the compacted path";
}

TEST_P(SessionTest, ChosenLogitRowsAndHiddenStatesMatchTheFullPass) {
  const Model& m = p_->model();
  const std::uint32_t E = m.params().n_embd, L = m.params().n_main_layers();
  const auto tokens = tokens_of(10, 9);
  const std::uint32_t n = static_cast<std::uint32_t>(tokens.size());
  auto ws = m.new_workspace(16);
  ASSERT_TRUE(ws);

  // Every row's logits and every tap, from one pass.
  auto full_kv = p_->new_session();
  ASSERT_TRUE(full_kv);
  std::vector<std::uint32_t> all_rows(n);
  for (std::uint32_t i = 0; i < n; ++i) all_rows[i] = i;
  std::vector<std::int32_t> taps;
  for (std::uint32_t id = 0; id <= L; ++id) taps.push_back(static_cast<std::int32_t>(id));
  const SequenceRows one{&(*full_kv)->kv(), n, 0, nullptr};
  ForwardBatch full;
  full.tokens = tokens;
  full.sequences = std::span<const SequenceRows>(&one, 1);
  full.logit_rows = all_rows;
  full.hidden_layers = taps;
  full.hidden_normed_output = true;
  ForwardOutput all;
  Status st = m.forward(**ws, full, all);
  ASSERT_TRUE(st.ok()) << st.message();
  ASSERT_EQ(all.logits.size(), std::size_t(n) * kVocab);
  ASSERT_EQ(all.hidden.size(), (taps.size() + 1) * n * E);

  // Tap 0 is the embedding: the f32 token_embd rows themselves.
  const TensorView emb = m.weights().token_embd.view;
  ASSERT_EQ(emb.type, type_id::f32);
  for (std::uint32_t i = 0; i < n; ++i)
    EXPECT_TRUE(same_bits(all.hidden.data() + i * E, static_cast<const float*>(emb.data) + tokens[i] * E, E)) << "row " << i;
  // Every tap differs from the one before (each layer changes x).
  for (std::size_t t = 1; t < taps.size(); ++t)
    EXPECT_FALSE(same_bits(all.hidden.data() + t * n * E, all.hidden.data() + (t - 1) * n * E, n * E)) << "tap " << t;
  // After output_norm every row has mean square ~1 times the norm weights: not the raw output.
  EXPECT_FALSE(same_bits(all.hidden.data() + L * n * E, all.hidden.data() + (L + 1) * n * E, n * E));

  // Chosen rows in any order, and a second pass with only some taps, over a fresh KV.
  auto kv2 = p_->new_session();
  ASSERT_TRUE(kv2);
  const std::uint32_t chosen[] = {7, 2, 9, 3, 4};
  const std::int32_t some_taps[] = {static_cast<std::int32_t>(L), 1};
  const SequenceRows two{&(*kv2)->kv(), n, 0, nullptr};
  ForwardBatch part = full;
  part.sequences = std::span<const SequenceRows>(&two, 1);
  part.logit_rows = chosen;
  part.argmax_rows = chosen;
  part.hidden_layers = some_taps;
  part.hidden_normed_output = false;
  ForwardOutput got;
  ASSERT_TRUE(m.forward(**ws, part, got).ok());
  ASSERT_EQ(got.logits.size(), std::size(chosen) * kVocab);
  for (std::size_t k = 0; k < std::size(chosen); ++k)
    EXPECT_TRUE(same_bits(got.logits.data() + k * kVocab, all.logits.data() + chosen[k] * kVocab, kVocab)) << "row " << chosen[k];
  // The backend's greedy ids of the same rows: the argmax of each row's logits.
  ASSERT_EQ(got.argmax.size(), std::size(chosen));
  for (std::size_t k = 0; k < std::size(chosen); ++k)
    EXPECT_EQ(got.argmax[k], argmax(std::vector<float>(all.logits.begin() + chosen[k] * kVocab,
                                                       all.logits.begin() + (chosen[k] + 1) * kVocab)))
        << "row " << chosen[k];
  ASSERT_EQ(got.hidden.size(), 2u * n * E);
  EXPECT_TRUE(same_bits(got.hidden.data(), all.hidden.data() + L * n * E, n * E));
  EXPECT_TRUE(same_bits(got.hidden.data() + n * E, all.hidden.data() + 1 * n * E, n * E));
}

TEST_P(SessionTest, ForwardBatchErrorsAreOneLine) {
  const Model& m = p_->model();
  auto ws = m.new_workspace(8);
  ASSERT_TRUE(ws);
  auto s = session();
  ASSERT_TRUE(s);
  const auto tokens = tokens_of(4, 10);
  const SequenceRows rows{&s->kv(), 4, 0, nullptr};
  ForwardOutput out;
  ForwardBatch b;
  b.tokens = tokens;
  b.sequences = std::span<const SequenceRows>(&rows, 1);
  const std::int32_t bad_tap[] = {static_cast<std::int32_t>(m.params().n_main_layers()) + 1};
  b.hidden_layers = bad_tap;
  EXPECT_EQ(m.forward(**ws, b, out).message(),
            "forward: hidden-state tap 4 is outside 0..3 (the layers' inputs, then the output)");
  b.hidden_layers = {};
  const std::uint32_t bad_row[] = {4};
  b.logit_rows = bad_row;
  EXPECT_EQ(m.forward(**ws, b, out).message(), "forward: logits asked for row 4 of 4");
  b.logit_rows = {};
  b.argmax_rows = bad_row;
  EXPECT_EQ(m.forward(**ws, b, out).message(), "forward: a greedy id asked for row 4 of 4");
  b.argmax_rows = {};
  const SequenceRows short_rows{&s->kv(), 3, 0, nullptr};
  b.sequences = std::span<const SequenceRows>(&short_rows, 1);
  EXPECT_EQ(m.forward(**ws, b, out).message(), "forward: the sequences hold 3 rows but the batch has 4 tokens");
}

INSTANTIATE_TEST_SUITE_P(model, SessionTest, ::testing::Values(Case{"f32", 2}, Case{"f16", 2}, Case{"f32", 3}),
                         [](const auto& info) {
                           return std::string(info.param.kv_type) + "_t" + std::to_string(info.param.threads);
                         });
