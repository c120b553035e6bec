// qwen35's hybrid forward pass on the tiny synthetic file (three gated delta-net layers, then one
// gated full-attention layer): its logits against the double-precision reference written from the
// architecture (reference_transformer.hpp), and the recurrent state's bookkeeping bit for bit:
// prefill in one pass, in pieces and token by token; a token tree's pass and the commit of one of
// its paths; cuts back to an earlier length; two sequences in one pass.
#include <gtest/gtest.h>

#include <cmath>

#include "engine/pipeline.hpp"
#include "model/architecture.hpp"
#include "model/recurrent_state.hpp"
#include "reference_transformer.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

class Qwen35Forward : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->path() / "qwen35.gguf";
    auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --seed 5 --out " + model_.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override { pipeline_ = build(16); }

  static std::shared_ptr<Pipeline> build(std::uint32_t max_batch) {
    Profile profile = Profile::builtin();
    profile.model = model_;
    profile.context = 96;
    profile.threads = 2;
    profile.kv.config.set("type", std::string("f32"));
    auto p = Pipeline::build(profile, max_batch);
    EXPECT_TRUE(p) << p.status().message();
    return p ? std::shared_ptr<Pipeline>(std::move(*p)) : nullptr;
  }
  std::unique_ptr<Session> session() {
    auto s = pipeline_->new_session();
    EXPECT_TRUE(s) << s.status().message();
    return s ? std::move(*s) : nullptr;
  }
  const ModelParams& params() const { return pipeline_->model().params(); }
  std::vector<TokenId> tokens(int n, int salt = 0) const {
    std::vector<TokenId> t;
    for (int i = 0; i < n; ++i) t.push_back(static_cast<TokenId>((i * 7919 + 13 + salt * 104729) % params().n_vocab));
    return t;
  }
  // Every float of a session's recurrent state (conv windows, then delta states, layer by layer).
  static std::vector<float> state_of(Session& s) {
    RecurrentState* st = s.recurrent();
    EXPECT_NE(st, nullptr);
    EXPECT_TRUE(s.settle_state().ok());  // a path accepted last is applied by the next pass, or now
    std::vector<float> all;
    for (std::uint32_t i = 0; st && i < st->layers(); ++i)
      for (const TensorView& t : {st->conv(i), st->delta(i)}) {
        const float* f = t.as<const float>();  // the CPU backend's memory is the host's
        all.insert(all.end(), f, f + t.elements());
      }
    return all;
  }
  // A plain session of `ts` appended one token at a time.
  std::unique_ptr<Session> decoded(std::span<const TokenId> ts) {
    auto s = session();
    for (TokenId t : ts) EXPECT_TRUE(s->append(std::span<const TokenId>(&t, 1)).ok());
    return s;
  }

  static TempDir* dir_;
  static std::filesystem::path model_;
  std::shared_ptr<Pipeline> pipeline_;
};
TempDir* Qwen35Forward::dir_ = nullptr;
std::filesystem::path Qwen35Forward::model_;

TEST_F(Qwen35Forward, LogitsMatchTheReference) {
  constexpr double kLogitTol = 2e-4;  // f32 weights and activations against double, relative to the logits' spread
  const ModelParams& mp = params();
  EXPECT_EQ(mp.count(LayerKind::delta_net), 3u);
  EXPECT_EQ(mp.count(LayerKind::gated_attention), 1u);
  auto s = session();
  const auto ts = tokens(12);
  ASSERT_TRUE(s->append(ts, /*all_logits=*/true).ok());
  const ref::Params rp = ref::params_of(mp);
  ref::Transformer reference(pipeline_->model().file(), rp);
  const auto want = reference.forward(std::vector<int>(ts.begin(), ts.end()));
  const std::size_t V = mp.n_vocab;
  for (std::size_t t = 0; t < ts.size(); ++t) {
    double spread = 0, worst = 0;
    for (std::size_t v = 0; v < V; ++v) spread = std::max(spread, std::fabs(want[t][v]));
    for (std::size_t v = 0; v < V; ++v) worst = std::max(worst, std::fabs(s->logits()[t * V + v] - want[t][v]));
    EXPECT_LT(worst, kLogitTol * std::max(1.0, spread)) << "position " << t;
    EXPECT_GT(spread, 0.1) << "degenerate logits";
  }
}

TEST_F(Qwen35Forward, PrefillInOnePassInPiecesAndTokenByTokenLeaveTheSameState) {
  const auto ts = tokens(20);
  auto whole = session();
  ASSERT_TRUE(whole->append(ts).ok());
  EXPECT_EQ(whole->recurrent()->position(), 20u);
  auto one_by_one = decoded(ts);
  EXPECT_EQ(whole->logits(), one_by_one->logits());
  EXPECT_EQ(state_of(*whole), state_of(*one_by_one));
  // Pieces of 3 rows (the batch size): every piece of more than one row a checkpoint, the last 4 kept.
  auto small = build(3);
  ASSERT_TRUE(small);
  auto pieces = small->new_session();
  ASSERT_TRUE(pieces);
  ASSERT_TRUE((*pieces)->append(ts).ok());
  EXPECT_EQ((*pieces)->logits(), one_by_one->logits());
  EXPECT_EQ(state_of(**pieces), state_of(*one_by_one));
  EXPECT_EQ((*pieces)->checkpoints(), (std::vector<std::uint32_t>{12, 15, 18, 20}));
  EXPECT_NE(state_of(*whole), std::vector<float>(state_of(*whole).size(), 0.0f)) << "the state never moved";
}

// A tree after 6 committed tokens: root r (the pending token), children a and b of r, c of a, d of
// c, e of b. Rows: r=0 a=1 b=2 c=3 e=4 d=5.
TEST_F(Qwen35Forward, ATreePassKeepsTheStateAndItsCommittedPathEqualsDecodingIt) {
  const auto prefix = tokens(6);
  const auto extra = tokens(6, 1);  // r a b c e d
  const std::vector<std::int32_t> parent{-1, 0, 0, 1, 2, 3};
  const std::uint32_t n = 6;
  std::vector<std::uint8_t> mask(n * n, 0);
  for (std::uint32_t t = 0; t < n; ++t)
    for (std::int32_t a = static_cast<std::int32_t>(t); a >= 0; a = parent[a]) mask[t * n + a] = 1;
  std::vector<std::int32_t> positions(n);
  for (std::uint32_t t = 0; t < n; ++t) {
    int depth = 0;
    for (std::int32_t a = parent[t]; a >= 0; a = parent[a]) ++depth;
    positions[t] = 6 + depth;
  }
  auto s = session();
  ASSERT_TRUE(s->append(prefix).ok());
  const auto before = state_of(*s);
  SequenceBatch batch;
  batch.tokens = extra;
  batch.positions = positions;
  batch.n_past = 6;
  batch.ancestor = mask.data();
  batch.all_logits = true;
  std::vector<float> logits;
  ASSERT_TRUE(s->forward(batch, logits).ok());
  EXPECT_EQ(state_of(*s), before) << "a tree pass moved the state";
  const std::size_t V = params().n_vocab;
  // Each row's logits are those of decoding its path.
  for (std::uint32_t t = 0; t < n; ++t) {
    std::vector<TokenId> path;
    for (std::int32_t a = static_cast<std::int32_t>(t); a >= 0; a = parent[a]) path.insert(path.begin(), extra[a]);
    std::vector<TokenId> all(prefix);
    all.insert(all.end(), path.begin(), path.end());
    auto plain = decoded(all);
    EXPECT_EQ(std::vector<float>(logits.begin() + t * V, logits.begin() + (t + 1) * V), plain->logits()) << "row " << t;
  }
  // Commit r, a, c, d (rows 0 1 3 5): the state of decoding those four.
  const std::vector<std::uint32_t> rows{0, 1, 3, 5};
  const std::vector<TokenId> kept{extra[0], extra[1], extra[3], extra[5]};
  ASSERT_TRUE(s->commit_rows(kept, rows, std::span<const float>(logits).subspan(5 * V, V)).ok());
  std::vector<TokenId> all(prefix);
  all.insert(all.end(), kept.begin(), kept.end());
  auto plain = decoded(all);
  // The commit records the path; the next pass applies it to each layer before reading it.
  EXPECT_EQ(s->recurrent()->position(), 10u);
  EXPECT_EQ(std::vector<std::uint32_t>(s->recurrent()->deferred().begin(), s->recurrent()->deferred().end()), rows);
  // And on from there: the next token's logits and the state equal the plain run's.
  const TokenId next = 77;
  ASSERT_TRUE(s->append(std::span<const TokenId>(&next, 1)).ok());
  EXPECT_TRUE(s->recurrent()->deferred().empty());
  ASSERT_TRUE(plain->append(std::span<const TokenId>(&next, 1)).ok());
  EXPECT_EQ(s->logits(), plain->logits());
  EXPECT_EQ(state_of(*s), state_of(*plain));
}

TEST_F(Qwen35Forward, RowsThatAreNotAPathAreRefusedAndChangeNothing) {
  auto s = session();
  const auto prefix = tokens(4);
  ASSERT_TRUE(s->append(prefix).ok());
  const std::vector<std::uint8_t> mask{1, 0, 0, 1, 1, 0, 1, 0, 1};  // rows 1 and 2 both children of 0
  const auto extra = tokens(3, 2);
  const std::vector<std::int32_t> positions{4, 5, 5};  // named: the batch holds a span of it
  SequenceBatch batch;
  batch.tokens = extra;
  batch.positions = positions;
  batch.n_past = 4;
  batch.ancestor = mask.data();
  batch.all_logits = true;
  std::vector<float> logits;
  ASSERT_TRUE(s->forward(batch, logits).ok());
  const std::vector<std::uint32_t> rows{0, 1, 2};
  const std::vector<TokenId> kept(extra.begin(), extra.end());
  const Status st = s->commit_rows(kept, rows, std::span<const float>(logits).subspan(0, params().n_vocab));
  EXPECT_EQ(st.message(), "commit_recurrent: row 2 does not follow 1 in the tree");
  // Nothing changed: the committed tokens, the state of decoding them, the pass's rows in the KV
  // store (a correct path can still be committed).
  EXPECT_EQ(s->tokens().size(), 4u);
  EXPECT_EQ(s->kv().size(), 7u);
  const std::vector<std::uint32_t> path{0, 2};
  const std::vector<TokenId> path_tokens{extra[0], extra[2]};
  auto check = decoded(prefix);
  EXPECT_EQ(state_of(*s), state_of(*check));
  ASSERT_TRUE(s->commit_rows(path_tokens, path, std::span<const float>(logits).subspan(2 * params().n_vocab, params().n_vocab)).ok());
  std::vector<TokenId> all(prefix);
  all.insert(all.end(), path_tokens.begin(), path_tokens.end());
  auto after = decoded(all);
  EXPECT_EQ(state_of(*s), state_of(*after));
}

TEST_F(Qwen35Forward, CutsToAnEarlierLengthRestoreTheStateOfThatLength) {
  auto small = build(4);
  ASSERT_TRUE(small);
  auto s = small->new_session();
  ASSERT_TRUE(s);
  const auto ts = tokens(17);
  ASSERT_TRUE((*s)->append(ts).ok());  // pieces of 4: checkpoints at 4, 8, 12, 16 (not after the last piece of 1)
  EXPECT_EQ((*s)->checkpoints(), (std::vector<std::uint32_t>{4, 8, 12, 16}));
  for (std::uint32_t cut : {14u, 12u, 9u, 3u, 0u}) {
    ASSERT_TRUE((*s)->truncate(cut).ok()) << cut;
    EXPECT_EQ((*s)->recurrent()->position(), cut);
    auto plain = decoded(std::span<const TokenId>(ts).first(cut));
    EXPECT_EQ(state_of(**s), state_of(*plain)) << "cut to " << cut;
    for (std::uint32_t at : (*s)->checkpoints()) EXPECT_LE(at, cut) << "a checkpoint past the cut survived";
  }
  // Grown again with other tokens, then cut inside them: the new tokens' state, not the old.
  const auto other = tokens(9, 3);
  ASSERT_TRUE((*s)->append(other).ok());
  ASSERT_TRUE((*s)->truncate(7).ok());
  auto plain = decoded(std::span<const TokenId>(other).first(7));
  EXPECT_EQ(state_of(**s), state_of(*plain));
  const TokenId next = 5;
  ASSERT_TRUE((*s)->append(std::span<const TokenId>(&next, 1)).ok());
  ASSERT_TRUE(plain->append(std::span<const TokenId>(&next, 1)).ok());
  EXPECT_EQ((*s)->logits(), plain->logits());
}

TEST_F(Qwen35Forward, TwoSequencesInOnePassEachKeepTheirOwnState) {
  auto a = session(), b = session();
  const auto ta = tokens(5, 4), tb = tokens(8, 5);
  ASSERT_TRUE(a->append(ta).ok());
  ASSERT_TRUE(b->append(tb).ok());
  auto ws = pipeline_->model().new_workspace(16);
  ASSERT_TRUE(ws);
  const TokenId na[] = {11, 12}, nb[] = {13};
  const SessionStep steps[] = {{a.get(), na}, {b.get(), nb}};
  ASSERT_TRUE(Session::append_together(**ws, steps).ok());
  std::vector<TokenId> all_a(ta), all_b(tb);
  all_a.insert(all_a.end(), std::begin(na), std::end(na));
  all_b.insert(all_b.end(), std::begin(nb), std::end(nb));
  auto pa = decoded(all_a), pb = decoded(all_b);
  EXPECT_EQ(state_of(*a), state_of(*pa));
  EXPECT_EQ(state_of(*b), state_of(*pb));
  EXPECT_EQ(a->logits(), pa->logits());
  EXPECT_EQ(b->logits(), pb->logits());
}

TEST_F(Qwen35Forward, APassWithoutTheStateOrAtTheWrongPositionIsRefused) {
  auto s = session();
  const auto ts = tokens(3);
  ASSERT_TRUE(s->append(ts).ok());
  auto ws = pipeline_->model().new_workspace(4);
  ASSERT_TRUE(ws);
  const TokenId t = 9;
  SequenceRows rows{&s->kv(), 1, 3, nullptr};
  ForwardBatch batch;
  batch.tokens = std::span<const TokenId>(&t, 1);
  batch.sequences = std::span(&rows, 1);
  ForwardOutput out;
  EXPECT_EQ(pipeline_->model().forward(**ws, batch, out).message(),
            "forward: a sequence of a qwen35 model has no recurrent state for its delta-net layers");
  rows.state = s->recurrent();
  rows.n_past = 2;
  EXPECT_EQ(pipeline_->model().forward(**ws, batch, out).message(),
            "forward: the recurrent state holds 3 tokens but the sequence's rows follow 2");
  // A mask that is not a tree in order: row 2's deepest ancestor is row 1, but it also sees row 0,
  // which row 1 does not.
  const std::vector<std::uint8_t> mask{1, 0, 0, 0, 1, 0, 1, 1, 1};
  const TokenId three[] = {9, 10, 11};
  SequenceRows tree{&s->kv(), 3, 3, mask.data(), s->recurrent()};
  batch.tokens = three;
  batch.sequences = std::span(&tree, 1);
  EXPECT_EQ(pipeline_->model().forward(**ws, batch, out).message(),
            "forward: the ancestor mask is not a tree in order at row 2 (a hybrid model's rows must each see "
            "themselves and exactly their parent's rows)");
}

}  // namespace

namespace {

// A drafter's block runner runs attention blocks (an MTP block); a delta-net block needs a
// sequence's recurrent state, so asking for one is refused by name.
TEST_F(Qwen35Forward, ABlockRunnerRefusesADeltaNetBlock) {
  const ModelView& view = pipeline_->model().view();
  auto runner = view.runner(view.block_shape(), 4);
  ASSERT_TRUE(runner) << runner.status().message();
  auto kv = pipeline_->new_kv_store(KvGeometry{1, params().n_head_kv, params().head_dim, params().head_dim, 8});
  ASSERT_TRUE(kv);
  std::vector<float> x(params().n_embd, 0.5f);
  BlockRows rows;
  rows.n_tokens = 1;
  const Status st = (*runner)->layer(0, **kv, 0, rows, f32_view(x.data(), params().n_embd, 1));
  EXPECT_EQ(st.message(), model_.string() + ": block runner: blk.0 is a delta_net layer; block runners run attention "
                                            "blocks (a delta-net needs a sequence's recurrent state)");
  // Its full-attention layer (blk.3) runs.
  EXPECT_TRUE((*runner)->layer(3, **kv, 0, rows, f32_view(x.data(), params().n_embd, 1)).ok());
}

}  // namespace
