// Speculative decoding on a qwen35 hybrid (the tiny synthetic file: three gated delta-net layers
// and one gated attention layer) is lossless and leaves the exact state: greedy ids equal plain
// greedy with the ngram drafter, with qwen35's own MTP block as the mtp drafter, with a drafter that
// knows the answer but errs (script_drafter.cpp: full, partial and no acceptance, rejected
// branches), and with them mixed; after the rounds (paths
// committed from the verify pass's kept rows) the recurrent state, the KV cache and the logits
// equal those of a plain run over the same tokens, bit for bit; two sequences verified in shared
// passes each equal their own plain run; dflash2 over a qwen35 target of its width.
#include <cstring>

#include "model/recurrent_state.hpp"
#include "../model/reference_transformer.hpp"
#include "speculative/speculative_decoder.hpp"
#include "zoo_test_util.hpp"

using namespace zoo;

namespace {

class Qwen35Speculative : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = dir_->path() / "qwen35.gguf";
    auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --nextn 1 --seed 11 --out " + model_.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  void SetUp() override {
    Profile profile = Profile::builtin();
    profile.model = model_;
    profile.context = 256;
    profile.threads = 1;
    profile.kv.config.set("type", std::string("f32"));
    profile.speculative.max_nodes = 24;
    profile.plugin_dirs.push_back(CHAOS_PLUGIN_DIR);  // the script drafter
    auto p = Pipeline::build(profile, 64);
    ASSERT_TRUE(p) << p.status().message();
    p_ = std::move(*p);
  }

  std::vector<TokenId> prompt(int salt) const {
    // A short phrase said three times: the n-gram drafter has something to copy from the start.
    std::vector<TokenId> phrase, out;
    for (int i = 0; i < 7; ++i) phrase.push_back(static_cast<TokenId>((i * 131 + salt * 37 + 3) % p_->model().params().n_vocab));
    for (int r = 0; r < 3; ++r) out.insert(out.end(), phrase.begin(), phrase.end());
    return out;
  }
  static std::vector<float> state_of(Session& s) {
    std::vector<float> all;
    RecurrentState* st = s.recurrent();
    EXPECT_TRUE(s.settle_state().ok());  // a path accepted last is applied by the next pass, or now
    for (std::uint32_t i = 0; st && i < st->layers(); ++i)
      for (const TensorView& t : {st->conv(i), st->delta(i)}) all.insert(all.end(), t.as<const float>(), t.as<const float>() + t.elements());
    return all;
  }
  // A plain session over `tokens`: the first `prompt` in one pass, the rest one at a time.
  // The script drafter over `plain` (the prompt, then plain greedy's ids).
  static PluginChoice script(const std::vector<TokenId>& prompt, const std::vector<TokenId>& ids) {
    std::string list;
    for (TokenId t : prompt) list += std::to_string(t) + ",";
    for (TokenId t : ids) list += std::to_string(t) + ",";
    Config c;
    c.set("script", list);
    return drafter("script", c);
  }
  std::unique_ptr<Session> plain_over(std::span<const TokenId> tokens, std::size_t prompt) {
    auto s = p_->new_session();
    EXPECT_TRUE(s);
    EXPECT_TRUE((*s)->append(tokens.first(prompt)).ok());
    for (std::size_t t = prompt; t < tokens.size(); ++t) EXPECT_TRUE((*s)->append(tokens.subspan(t, 1)).ok());
    return std::move(*s);
  }

  static TempDir* dir_;
  static std::filesystem::path model_;
  std::unique_ptr<Pipeline> p_;
};
TempDir* Qwen35Speculative::dir_ = nullptr;
std::filesystem::path Qwen35Speculative::model_;

TEST_F(Qwen35Speculative, GreedyIdsAndTheStateEqualAPlainRun) {
  for (int salt = 0; salt < 4; ++salt) {
    const auto ids = prompt(salt);
    const Generated plain = generate(*p_, ids, greedy(), 96, nullptr);
    ASSERT_EQ(plain.ids.size(), 96u);
    std::vector<std::pair<std::string, std::unique_ptr<Drafters>>> sets;
    sets.emplace_back("ngram", drafters(*p_, {drafter("ngram")}, 16, 8, /*adaptive=*/false));
    sets.emplace_back("script", drafters(*p_, {script(ids, plain.ids)}, 16, 8, false));
    sets.emplace_back("script + ngram", drafters(*p_, {script(ids, plain.ids), drafter("ngram")}, 24, 8, false));
    // qwen35's own MTP block (a gated full-attention block) as the mtp drafter, proposing every
    // round (random weights: its drafts are rejected; with the script's, paths of every length).
    Config mtp;
    mtp.set("p_min", 0.0);
    mtp.set("top_k", std::int64_t{2});
    sets.emplace_back("mtp", drafters(*p_, {drafter("mtp", mtp)}, 16, 8, false));
    sets.emplace_back("script + mtp + ngram",
                      drafters(*p_, {script(ids, plain.ids), drafter("mtp", mtp), drafter("ngram")}, 24, 8, false));
    for (const auto& [name, set] : sets) {
      ASSERT_TRUE(set) << name;
      auto decoder = set->new_decoder();
      ASSERT_TRUE(decoder) << decoder.status().message();
      std::unique_ptr<Session> kept;
      const Generated spec = generate(*p_, ids, greedy(), 96, decoder->get(), &kept);
      ASSERT_EQ(spec.ids, plain.ids) << name << ", prompt " << salt;
      const SpeculativeStats& st = (*decoder)->stats();
      if (name == "mtp") EXPECT_GT(st.drafted, 50u) << "the MTP block must have proposed";
      if (name.starts_with("script")) {  // (random weights: ngram and mtp alone are rejected or silent)
        EXPECT_GT(st.accepted, 20u) << name;
        EXPECT_LT(st.accepted, st.drafted) << name << ": some drafts must be rejected";
      }
      // The session after the rounds: its state and KV those of a plain run (greedy rounds read
      // the backend's greedy ids, not logits: none are kept).
      auto ref = plain_over(spec.session_tokens, ids.size());
      EXPECT_EQ(state_of(*kept), state_of(*ref)) << name << ", prompt " << salt;
      EXPECT_TRUE(kept->logits().empty()) << name;
      const std::vector<TokenId> probe = {5, 17, 99, 300};
      ASSERT_TRUE(kept->append(probe, true).ok());
      ASSERT_TRUE(ref->append(probe, true).ok());
      EXPECT_EQ(std::memcmp(kept->logits().data(), ref->logits().data(), ref->logits().size() * sizeof(float)), 0)
          << name << ": logits of tokens appended after the speculative run";
    }
  }
}

// qwen35's own MTP block (blk.n_layer: a gated full-attention block after eh_proj over [embedding ;
// hidden]) as the mtp drafter: its drafts and their probabilities equal the double-precision
// reference's (reference_transformer.hpp, mtp_drafts; shared/reference/qwen35.md section 7).
TEST_F(Qwen35Speculative, MtpDraftsEqualTheReference) {
  constexpr double kProbTolerance = 1e-4;  // f32 against double on this tiny f32 file
  const ModelParams& mp = p_->model().params();
  ASSERT_EQ(mp.n_nextn, 1u);
  const ref::Params rp = ref::params_of(mp);
  const ref::Transformer reference(p_->model().file(), rp);
  auto host = drafter_host(*p_);
  auto lib = p_->find_plugin(PluginKind::drafter, "mtp");
  ASSERT_TRUE(lib) << lib.status().message();
  Config cfg;
  cfg.set("max_draft", std::int64_t{3});
  cfg.set("p_min", 0.0);
  auto factory = (*lib)->create<DrafterFactory>(p_->host(), cfg);
  ASSERT_TRUE(factory) << factory.status().message();
  for (int salt = 0; salt < 3; ++salt) {
    const auto ids = prompt(salt);
    // The target over the context: its normed final hidden states and its next token.
    auto s = p_->new_session();
    ASSERT_TRUE(s);
    const SequenceRows seq{&(*s)->kv(), static_cast<std::uint32_t>(ids.size()), 0, nullptr};
    const auto last = static_cast<std::uint32_t>(ids.size() - 1);
    ForwardBatch batch;
    batch.tokens = ids;
    batch.sequences = std::span(&seq, 1);
    batch.logit_rows = std::span(&last, 1);
    batch.hidden_normed_output = true;
    ForwardOutput out;
    ASSERT_TRUE((*s)->forward(batch, out).ok());
    const auto next = static_cast<TokenId>(std::max_element(out.logits.begin(), out.logits.end()) - out.logits.begin());
    auto made = (*factory)->create(*host);
    ASSERT_TRUE(made) << made.status().message();
    auto mtp = std::move(*made);
    std::vector<TokenId> context = ids;
    context.push_back(next);
    CommitInfo info;
    info.context = context;
    info.n_committed = static_cast<std::uint32_t>(ids.size());
    info.hidden = HiddenStates{static_cast<std::uint32_t>(ids.size()), mp.n_embd, 1, out.hidden.data()};
    ASSERT_TRUE(mtp->begin(info).ok());
    DraftTree tree;
    ASSERT_TRUE(mtp->propose(DraftRequest{context, 16, 16}, tree).ok());
    std::vector<double> probs;
    const auto want = reference.mtp_drafts(std::vector<int>(ids.begin(), ids.end()), next, 3, &probs);
    ASSERT_EQ(tree.tokens, std::vector<TokenId>(want.begin(), want.end())) << "prompt " << salt;
    for (std::size_t k = 0; k < want.size(); ++k)
      EXPECT_NEAR(tree.q[k], probs[k], kProbTolerance) << "prompt " << salt << " step " << k + 1;
  }
}

// DFlash2 reads the target's hidden states (taps 1..3) and shares its embedding and lm_head: the
// zoo drafter (models/zoo-dflash2-2x256.gguf, made for a 4-layer width-256 target of 4096 tokens)
// over a qwen35 file of those dimensions. Random target weights: its drafts are rejected, so the
// script drafter beside it brings the accepted paths.
TEST(Qwen35DFlash2, GreedyIdsAndTheStateEqualAPlainRun) {
  TempDir dir;
  const auto model = dir.path() / "qwen35-256.gguf";
  auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --n-embd 256 --head-dim 64 --n-ff 768 " +
                       "--n-vocab 4096 --seed 4 --out " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  Profile profile = Profile::builtin();
  profile.model = model;
  profile.context = 256;
  profile.threads = 1;
  profile.plugin_dirs.push_back(CHAOS_PLUGIN_DIR);
  auto p = Pipeline::build(profile, 64);
  ASSERT_TRUE(p) << p.status().message();
  Config dflash;
  dflash.set("model", (kRoot / "models" / "zoo-dflash2-2x256.gguf").string());
  std::vector<TokenId> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(static_cast<TokenId>((i * 389 + 7) % 4096));
  const Generated plain = generate(**p, prompt, greedy(), 64, nullptr);
  ASSERT_EQ(plain.ids.size(), 64u);
  std::string list;
  for (TokenId t : prompt) list += std::to_string(t) + ",";
  for (TokenId t : plain.ids) list += std::to_string(t) + ",";
  Config script;
  script.set("script", list);
  for (const auto& names : {std::vector<PluginChoice>{drafter("dflash2", dflash)},
                            std::vector<PluginChoice>{drafter("script", script), drafter("dflash2", dflash)}}) {
    auto set = drafters(**p, names, 16, 8, false);
    ASSERT_TRUE(set);
    auto decoder = set->new_decoder();
    ASSERT_TRUE(decoder) << decoder.status().message();
    std::unique_ptr<Session> kept;
    const Generated spec = generate(**p, prompt, greedy(), 64, decoder->get(), &kept);
    ASSERT_EQ(spec.ids, plain.ids) << names.size() << " drafters";
    EXPECT_GT((*decoder)->stats().drafted, 20u);
    auto ref = (*p)->new_session();
    ASSERT_TRUE(ref);
    ASSERT_TRUE((*ref)->append(std::span(spec.session_tokens).first(prompt.size())).ok());
    for (std::size_t t = prompt.size(); t < spec.session_tokens.size(); ++t)
      ASSERT_TRUE((*ref)->append(std::span(spec.session_tokens).subspan(t, 1)).ok());
    const TokenId probe[] = {5, 17, 99};
    ASSERT_TRUE(kept->append(probe, true).ok());
    ASSERT_TRUE((*ref)->append(probe, true).ok());
    EXPECT_EQ(kept->logits(), (*ref)->logits()) << "logits after the speculative run";
  }
}

TEST_F(Qwen35Speculative, TwoSequencesInSharedVerifyPassesEachEqualTheirPlainRun) {
  const auto pa = prompt(5), pb = prompt(6);
  const Generated plain_a = generate(*p_, pa, greedy(), 64, nullptr), plain_b = generate(*p_, pb, greedy(), 64, nullptr);
  auto set_a = drafters(*p_, {script(pa, plain_a.ids)}, 16, 8, false);
  auto set_b = drafters(*p_, {script(pb, plain_b.ids)}, 16, 8, false);
  ASSERT_TRUE(set_a && set_b);
  auto sa = p_->new_session(), sb = p_->new_session();
  ASSERT_TRUE(sa && sb);
  auto da = set_a->new_decoder(), db = set_b->new_decoder();
  ASSERT_TRUE(da && db);
  ASSERT_TRUE((*da)->prefill(**sa, pa).ok());
  ASSERT_TRUE((*db)->prefill(**sb, pb).ok());
  Sampler sampler_a(greedy()), sampler_b(greedy());
  std::vector<TokenId> out_a{sampler_a.sample((*sa)->logits(), (*sa)->tokens())},
      out_b{sampler_b.sample((*sb)->logits(), (*sb)->tokens())};
  auto ws = p_->model().new_workspace(64);
  ASSERT_TRUE(ws);
  std::vector<PassPart> parts;
  ForwardOutput out;
  while (out_a.size() < 64 || out_b.size() < 64) {
    ASSERT_TRUE((*da)->plan_step(**sa, sampler_a, out_a.back(), 32, 32).ok());
    ASSERT_TRUE((*db)->plan_step(**sb, sampler_b, out_b.back(), 32, 32).ok());
    const PlannedSequence seqs[] = {{da->get(), sa->get()}, {db->get(), sb->get()}};
    ASSERT_TRUE(run_planned(**ws, seqs, out, parts).ok());
    std::vector<TokenId> got;
    ASSERT_TRUE((*da)->finish_step(**sa, sampler_a, parts[0], got).ok());
    out_a.insert(out_a.end(), got.begin(), got.end());
    got.clear();
    ASSERT_TRUE((*db)->finish_step(**sb, sampler_b, parts[1], got).ok());
    out_b.insert(out_b.end(), got.begin(), got.end());
  }
  // (Plain generation stops at an end-of-generation token: the ids before it.)
  out_a.resize(plain_a.ids.size()), out_b.resize(plain_b.ids.size());
  EXPECT_EQ(out_a, plain_a.ids);
  EXPECT_EQ(out_b, plain_b.ids);
  auto ra = plain_over((*sa)->tokens(), pa.size()), rb = plain_over((*sb)->tokens(), pb.size());
  EXPECT_EQ(state_of(**sa), state_of(*ra));
  EXPECT_EQ(state_of(**sb), state_of(*rb));
}

}  // namespace
