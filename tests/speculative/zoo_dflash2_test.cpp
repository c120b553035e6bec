// The dflash2 drafter on the zoo pair (models/zoo-qwen3-4x256.gguf, models/zoo-dflash2-2x256.gguf):
// - its block pass equals the PyTorch reference (tests/fixtures/zoo-dflash2.*, float64 from the
//   f16 weights) for the fixture's contexts and hidden states: slot logits within a named
//   tolerance, the plain-argmax drafts and the DFlash2 selector walk exactly;
// - graft's own verify-pass taps are the features the reference fed it;
// - speculative greedy decoding with it (alone, with the other drafters, and with a plain DFlash
//   file without the DFlash2 extras) gives the plain greedy ids, and sampling the plain sampled
//   ids for the same seed;
// - a drafter file that does not fit the target is one line naming the file and the numbers.
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>

#include "dflash_drafter.hpp"
#include "gguf/gguf_writer.hpp"
#include "zoo_test_util.hpp"

using namespace zoo;
using namespace graft::dflash2;

namespace {

const fs::path kDFlash = kRoot / "models" / "zoo-dflash2-2x256.gguf";
const fs::path kFixtures = kRoot / "tests" / "fixtures";

// The fixture is float64 from the f16-rounded weights; graft computes in f32 (f16 weights, f32
// activations and KV): the slot logits differ by float rounding through 2 layers, the fc and the
// lm_head. Relative to the row's largest logit, as the target's own fixture test measures.
constexpr double kLogitTolerance = 2e-3;
// q is a softmax probability of those logits.
constexpr double kProbTolerance = 2e-3;
// The target's taps against the reference's features (4 target layers in f32 against float64).
constexpr double kFeatureTolerance = 2e-3;

std::vector<float> read_floats(const fs::path& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  EXPECT_TRUE(in) << path;
  std::vector<float> v(static_cast<std::size_t>(in.tellg()) / sizeof(float));
  in.seekg(0);
  in.read(reinterpret_cast<char*>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(float)));
  return v;
}

nlohmann::json fixture() {
  std::ifstream in(kFixtures / "zoo-dflash2.json");
  EXPECT_TRUE(in) << "tests/fixtures/zoo-dflash2.json";
  return nlohmann::json::parse(in);
}

DrafterOptions chain_options(bool selector) {
  DrafterOptions o;
  o.model = kDFlash.string();
  o.top_k = 1;  // a chain: the best child at every depth
  o.adaptive = false;
  o.selector = selector;
  return o;
}

Config dflash_config(const fs::path& model) {
  Config c;
  c.set("model", model.string());
  return c;
}

// A copy of the zoo drafter with metadata replaced (nullopt: removed), tensors dropped where
// `keep` says no, and tensors' rows cut to `rows` where `rows` gives a count.
struct Edit {
  std::vector<std::pair<std::string, std::optional<gguf::Value>>> meta;
  std::function<bool(const std::string&)> keep = [](const std::string&) { return true; };
  std::function<std::optional<std::uint64_t>(const std::string&)> rows = [](const std::string&) {
    return std::optional<std::uint64_t>();
  };
};

fs::path edited_drafter(const fs::path& dir, const std::string& name, const Edit& e) {
  auto src = gguf::File::open(kDFlash);
  EXPECT_TRUE(src) << src.status().message();
  gguf::Writer w;
  for (const auto& kv : (*src)->metadata()) {
    auto it = std::find_if(e.meta.begin(), e.meta.end(), [&](const auto& m) { return m.first == kv.key; });
    if (it == e.meta.end()) w.add(kv.key, kv.value);
  }
  for (const auto& [key, value] : e.meta)
    if (value) w.add(key, *value);
  for (const auto& t : (*src)->tensors()) {
    if (!e.keep(t.name)) continue;
    std::array<std::uint64_t, 4> ne = t.ne;
    std::size_t bytes = t.bytes;
    if (auto r = e.rows(t.name)) {
      bytes = t.bytes / ne[1] * *r;
      ne[1] = *r;
    }
    EXPECT_TRUE(w.add_tensor(t.name, std::span(ne.data(), t.n_dims), t.type, std::span(t.data, bytes)).ok()) << t.name;
  }
  const fs::path out = dir / name;
  EXPECT_TRUE(w.write(out).ok());
  return out;
}

// The zoo drafter without its DFlash2 parts: a plain DFlash file in llama.cpp's convention.
fs::path plain_dflash(const fs::path& dir) {
  Edit e;
  for (const char* k : {"dflash.conv_kernel_size", "dflash.conv_group_size", "dflash.selector_rank",
                        "dflash.selector_top_k", "dflash.parts"})
    e.meta.emplace_back(k, std::nullopt);
  e.keep = [](const std::string& n) { return n.find("_conv_") == std::string::npos && n.rfind("selector_", 0) != 0; };
  return edited_drafter(dir, "plain-dflash.gguf", e);
}

}  // namespace

TEST(DFlash2Drafter, BlockProposalsEqualThePyTorchFixtures) {
  const auto fx = fixture();
  const std::vector<float> features = read_floats(kFixtures / "zoo-dflash2.features.bin");
  const std::vector<float> fx_logits = read_floats(kFixtures / "zoo-dflash2.logits.bin");
  const std::size_t V = fx["n_vocab"].get<std::size_t>(), F = fx["feature_width"].get<std::size_t>();
  const std::size_t slots = fx["block_size"].get<std::size_t>() - 1;
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  auto host = drafter_host(*p);
  auto file = DFlashFile::open(*host, kDFlash.string());
  ASSERT_TRUE(file) << file.status().message();
  ASSERT_TRUE((*file)->has_conv && (*file)->has_selector);
  ASSERT_EQ((*file)->target_layers, fx["target_layers"].get<std::vector<std::int32_t>>());
  ASSERT_EQ((*file)->feature_width, F);
  std::size_t case_no = 0;
  double worst = 0;
  for (const auto& c : fx["cases"]) {
    const auto ids = c["ids"].get<std::vector<TokenId>>();
    std::vector<TokenId> context = ids;
    context.push_back(c["next_token"].get<TokenId>());
    ASSERT_EQ(c["block_positions"][0].get<std::size_t>(), ids.size());
    CommitInfo info;
    info.context = context;
    info.n_committed = static_cast<std::uint32_t>(ids.size());
    info.hidden = HiddenStates{static_cast<std::uint32_t>(ids.size()), static_cast<std::uint32_t>(F / 3), 3,
                               features.data() + c["feature_rows_start"].get<std::size_t>() * F};
    for (const bool selector : {false, true}) {
      auto made = DFlashDrafter::create(*host, *file, chain_options(selector));
      ASSERT_TRUE(made) << made.status().message();
      DFlashDrafter& d = **made;
      ASSERT_TRUE(d.begin(info).ok());
      DraftTree tree;
      Status st = d.propose(DraftRequest{context, 16, 16}, tree);
      ASSERT_TRUE(st.ok()) << st.message();
      const char* key = selector ? "drafts_selector" : "drafts_argmax";
      EXPECT_EQ(tree.tokens, c[key].get<std::vector<TokenId>>()) << key << ": " << c["context"];
      EXPECT_EQ(tree.parents, (std::vector<std::int32_t>{-1, 0, 1, 2, 3, 4, 5}));
      ASSERT_EQ(d.slot_logits().size(), slots * V);
      for (std::size_t k = 0; k < slots; ++k) {
        const float* want = fx_logits.data() + (c["logit_rows_start"].get<std::size_t>() + k) * V;
        const float* got = d.slot_logits().data() + k * V;
        double scale = 0, diff = 0;
        for (std::size_t v = 0; v < V; ++v) {
          scale = std::max(scale, std::abs(double(want[v])));
          diff = std::max(diff, std::abs(double(got[v]) - double(want[v])));
        }
        worst = std::max(worst, diff / scale);
        EXPECT_LE(diff / scale, kLogitTolerance) << "case " << case_no << " slot " << k + 1;
        if (selector) continue;
        // Plain drafts: q is the slot's softmax probability of its token.
        const float mx = *std::max_element(want, want + V);
        double sum = 0;
        for (std::size_t v = 0; v < V; ++v) sum += std::exp(double(want[v]) - mx);
        EXPECT_NEAR(tree.q[k], std::exp(double(want[tree.tokens[k]]) - mx) / sum, kProbTolerance)
            << "case " << case_no << " slot " << k + 1;
      }
      EXPECT_EQ(best_chain(d.choices()), tree.tokens);
    }
    ++case_no;
  }
  EXPECT_EQ(case_no, fx["cases"].size());
  RecordProperty("worst_relative_logit_difference", std::to_string(worst));
}

// Rounds commit a few tokens at a time, and a sequence may be cut back: the drafter's context
// must then be exactly the one a single begin() over the same tokens builds (bit for bit: each
// token's K/V depend on its own hidden states and position only) when every queued token runs
// (resume_window 0, or as long as the queue). A short window skips the oldest queued tokens: the
// slot logits change, the drafter stays in step (a cut into the skipped stretch included), and a
// new sequence is exact again.
TEST(DFlash2Drafter, ContextBuiltInPiecesOrCutBackEqualsOneBuiltAtOnce) {
  const auto fx = fixture();
  const std::vector<float> features = read_floats(kFixtures / "zoo-dflash2.features.bin");
  const std::size_t F = fx["feature_width"].get<std::size_t>();
  const auto& c = fx["cases"].back();
  const auto ids = c["ids"].get<std::vector<TokenId>>();
  std::vector<TokenId> context = ids;
  context.push_back(c["next_token"].get<TokenId>());
  const float* rows = features.data() + c["feature_rows_start"].get<std::size_t>() * F;
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  auto host = drafter_host(*p);
  auto file = DFlashFile::open(*host, kDFlash.string());
  ASSERT_TRUE(file) << file.status().message();
  // Tokens [first, end) of the context, committed with the pending token after them.
  auto commit = [&](std::uint32_t first, std::uint32_t end) {
    CommitInfo info;
    info.context = std::span<const TokenId>(context.data(), end + 1);
    info.first = first;
    info.n_committed = end;
    info.hidden = HiddenStates{end - first, static_cast<std::uint32_t>(F / 3), 3, rows + first * F};
    return info;
  };
  auto logits_after = [&](const std::function<void(Drafter&)>& build, std::uint32_t window = 0) {
    DrafterOptions o = chain_options(true);
    o.resume_window = window;
    auto d = DFlashDrafter::create(*host, *file, o);
    EXPECT_TRUE(d) << d.status().message();
    if (!d) return std::vector<float>{};
    build(**d);
    DraftTree tree;
    EXPECT_TRUE((*d)->propose(DraftRequest{context, 16, 16}, tree).ok());
    return (*d)->slot_logits();
  };
  const auto n = static_cast<std::uint32_t>(ids.size());
  const auto whole = logits_after([&](Drafter& d) { ASSERT_TRUE(d.begin(commit(0, n)).ok()); });
  ASSERT_FALSE(whole.empty());
  auto queued = [&](Drafter& d) {
    ASSERT_TRUE(d.begin(commit(0, 10)).ok());
    for (std::uint32_t at = 10, step = 1; at < n; at += step, step = step % 5 + 1)
      ASSERT_TRUE(d.accept(commit(at, std::min(n, at + step))).ok());
  };
  const auto pieces = logits_after(queued);
  EXPECT_TRUE(logits_after(queued, n - 10) == whole) << "a window as long as the queue";
  const auto windowed = logits_after(queued, 4);
  ASSERT_EQ(windowed.size(), whole.size());
  double diff = 0;
  for (std::size_t i = 0; i < whole.size(); ++i) diff = std::max(diff, std::abs(double(windowed[i]) - whole[i]));
  EXPECT_GT(diff, 1e-3) << "a 4-token window over " << n - 10 << " queued tokens changed nothing";
  const auto rebuilt = logits_after([&](Drafter& d) {
    queued(d);
    DraftTree tree;
    ASSERT_TRUE(d.propose(DraftRequest{context, 16, 16}, tree).ok());  // skips all but 4 queued tokens
    ASSERT_TRUE(d.truncate(20).ok());                                   // a cut into the skipped stretch
    ASSERT_TRUE(d.accept(commit(20, n)).ok());
    ASSERT_TRUE(d.truncate(0).ok());
    ASSERT_TRUE(d.begin(commit(0, n)).ok());
  }, 4);
  EXPECT_TRUE(rebuilt == whole) << "truncate(0) and begin after a skipped stretch";
  const auto cut = logits_after([&](Drafter& d) {
    ASSERT_TRUE(d.begin(commit(0, n)).ok());
    ASSERT_TRUE(d.truncate(40).ok());
    ASSERT_TRUE(d.accept(commit(40, n)).ok());
  });
  EXPECT_TRUE(pieces == whole) << "context committed a few tokens at a time";
  EXPECT_TRUE(cut == whole) << "context cut back to 40 tokens and committed again";
  // An out-of-step commit is an error, not a silent misalignment.
  auto d = DFlashDrafter::create(*host, *file, chain_options(true));
  ASSERT_TRUE(d);
  ASSERT_TRUE((*d)->begin(commit(0, 10)).ok());
  const Status gap = (*d)->accept(commit(12, 20));
  EXPECT_EQ(gap.message(), "dflash2: the drafter holds 10 context tokens but the commit starts at token 12");
}

// The features the drafter reads in decoding come from graft's verify pass: the target's taps
// 1, 2, 3 (the inputs of those layers), token-major, are the reference's features.
TEST(DFlash2Drafter, TheTargetsTapsAreTheFixtureFeatures) {
  const auto fx = fixture();
  const std::vector<float> features = read_floats(kFixtures / "zoo-dflash2.features.bin");
  const std::size_t F = fx["feature_width"].get<std::size_t>(), E = F / 3;
  const auto taps = fx["target_layers"].get<std::vector<std::int32_t>>();
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  for (const auto& c : fx["cases"]) {
    const auto ids = c["ids"].get<std::vector<TokenId>>();
    auto s = p->new_session();
    ASSERT_TRUE(s);
    const SequenceRows seq{&(*s)->kv(), static_cast<std::uint32_t>(ids.size()), 0, nullptr};
    ForwardBatch batch;
    batch.tokens = ids;
    batch.sequences = std::span(&seq, 1);
    batch.hidden_layers = taps;
    ForwardOutput out;
    ASSERT_TRUE((*s)->forward(batch, out).ok());
    ASSERT_EQ(out.hidden.size(), ids.size() * F);
    const float* want = features.data() + c["feature_rows_start"].get<std::size_t>() * F;
    double worst = 0;
    for (std::size_t t = 0; t < ids.size(); ++t)
      for (std::size_t j = 0; j < taps.size(); ++j) {
        // ForwardOutput is tap-major; the fixture (and CommitInfo) token-major.
        const float* got = out.hidden.data() + (j * ids.size() + t) * E;
        const float* ref = want + t * F + j * E;
        double scale = 0, diff = 0;
        for (std::size_t e = 0; e < E; ++e) {
          scale = std::max(scale, std::abs(double(ref[e])));
          diff = std::max(diff, std::abs(double(got[e]) - double(ref[e])));
        }
        worst = std::max(worst, diff / scale);
      }
    EXPECT_LE(worst, kFeatureTolerance) << c["context"];
  }
}

// DFlash2's conv_base is 3-D ([n_embd, kernel, 2]): a drafter reads it in the file's shape.
TEST(DFlash2Drafter, ThreeDimensionalTablesKeepTheFilesShape) {
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  auto host = drafter_host(*p);
  auto file = host->open_file(kDFlash.string());
  ASSERT_TRUE(file) << file.status().message();
  auto w = (*file)->weight("blk.1.ffn_conv_base");
  ASSERT_TRUE(w) << w.status().message();
  const TensorView& v = (*w)->view();
  EXPECT_EQ(v.n_dims, 3);
  EXPECT_EQ(v.ne[0], 256);
  EXPECT_EQ(v.ne[1], 2);
  EXPECT_EQ(v.ne[2], 2);
  EXPECT_EQ(v.type, type_id::f32);
  EXPECT_EQ(v.nb[2], 256u * 2 * sizeof(float));
}

// Speculative greedy output with dflash2 is plain greedy output, on every 4th bench/spec prompt:
// with every proposal verified (adaptive off: deep trees, many rejected branches), and with the
// host's adaptive choices beside the other drafters.
TEST(DFlash2Drafter, GreedyLosslessAloneAndWithTheOtherDrafters) {
  TempDir dir;
  const fs::path plain_file = plain_dflash(dir.path());
  for (const char* kv : {"f32", "f16"}) {
    auto p = pipeline("", kv, nullptr);
    ASSERT_TRUE(p);
    struct Setup {
      std::string label;
      std::unique_ptr<Drafters> set;
      bool every_proposal_verified;
    };
    auto load = [&](std::vector<PluginChoice> list, bool adaptive) {
      SpeculativeSettings spec;
      spec.enabled = true;
      spec.adaptive = adaptive;
      auto d = Drafters::load(*p, std::move(list), spec);
      EXPECT_TRUE(d) << d.status().message();
      return d ? std::move(*d) : nullptr;
    };
    std::vector<Setup> setups;
    setups.push_back({"dflash2", load({drafter("dflash2", dflash_config(kDFlash))}, false), true});
    setups.push_back({"dflash2 (plain DFlash file)", load({drafter("dflash2", dflash_config(plain_file))}, false), true});
    setups.push_back({"ngram,mtp,dflash2 (adaptive)",
                      load({drafter("ngram"), drafter("mtp"), drafter("dflash2", dflash_config(kDFlash))}, true), false});
    for (const auto& c : setups) ASSERT_TRUE(c.set) << c.label;
    const auto prompts = corpus();
    std::vector<double> tokens_per_round(setups.size(), 0);
    std::size_t n_prompts = 0;
    for (std::size_t i = 0; i < prompts.size(); i += 4) {
      ++n_prompts;
      const auto prompt = tokenize(*p, prompts[i].second);
      const Generated plain = generate(*p, prompt, greedy(), 256, nullptr);
      ASSERT_EQ(plain.ids.size(), 256u) << prompts[i].first;
      for (std::size_t k = 0; k < setups.size(); ++k) {
        auto decoder = setups[k].set->new_decoder();
        ASSERT_TRUE(decoder) << decoder.status().message();
        const Generated spec = generate(*p, prompt, greedy(), 256, decoder->get());
        ASSERT_EQ(spec.ids, plain.ids) << prompts[i].first << " with " << setups[k].label << ", kv " << kv;
        EXPECT_EQ(spec.stats.stop, plain.stats.stop);
        for (const DrafterStats& ds : (*decoder)->stats().drafters)
          EXPECT_EQ(ds.failures, 0u) << ds.name << " in " << setups[k].label;
        tokens_per_round[k] += (*decoder)->stats().tokens_per_round();
      }
    }
    // Not a speed claim: with every proposal verified, blocks were accepted often enough to
    // exercise multi-token rounds (the zoo pair gives about 3 tokens per round).
    for (std::size_t k = 0; k < setups.size(); ++k) {
      if (setups[k].every_proposal_verified) {
        EXPECT_GT(tokens_per_round[k] / double(n_prompts), 2.0) << setups[k].label << ", kv " << kv;
      }
    }
  }
}

// Under sampling the host samples the target at every node and matches (dflash2's drafts are
// ranked, not drawn): the same tokens as plain sampling for the same seed.
TEST(DFlash2Drafter, SamplingEmitsThePlainSampledTokensForTheSameSeed) {
  auto p = pipeline("", "f32", nullptr);
  ASSERT_TRUE(p);
  SpeculativeSettings spec;
  spec.enabled = true;
  spec.adaptive = false;  // every proposal verified
  auto set = Drafters::load(*p, {drafter("dflash2", dflash_config(kDFlash))}, spec);
  ASSERT_TRUE(set) << set.status().message();
  const auto prompts = corpus();
  SamplingSettings s;
  s.temperature = 0.8;
  s.repeat_penalty = 1.1;
  double accepted = 0;
  for (std::size_t i = 2; i < prompts.size(); i += 8) {
    s.seed = static_cast<std::int64_t>(2000 + i);
    const auto prompt = tokenize(*p, prompts[i].second);
    const Generated plain = generate(*p, prompt, s, 128, nullptr);
    auto decoder = (*set)->new_decoder();
    ASSERT_TRUE(decoder) << decoder.status().message();
    const Generated spec_run = generate(*p, prompt, s, 128, decoder->get());
    EXPECT_EQ(spec_run.ids, plain.ids) << prompts[i].first;
    accepted += static_cast<double>((*decoder)->stats().accepted);
  }
  EXPECT_GT(accepted, 50) << "drafts were accepted while sampling";
}

namespace {

std::string run_with_drafter(const fs::path& model) {
  return std::string(GRAFT_EXE) + " run -m " + kTarget.string() + " -c 256 -t 1 --temp 0 -p 'def f(x):' -n 4 " +
         "--draft dflash2 --draft-model " + model.string();
}

void expect_one_line_error(const fs::path& model, const std::string& message) {
  auto r = run_command(run_with_drafter(model));
  EXPECT_EQ(r.exit_code, 1) << r.output;
  const std::string want = "graft run: command line: --draft: drafter 'dflash2': " + message + "\n";
  EXPECT_NE(r.output.find(want), std::string::npos) << "want: " << want << "got: " << r.output;
}

}  // namespace

TEST(DFlash2Errors, AMissingDrafterFileNamesThePath) {
  TempDir dir;
  const fs::path missing = dir.path() / "nosuch.gguf";
  expect_one_line_error(missing, missing.string() + ": cannot open: No such file or directory");
}

TEST(DFlash2Errors, ATargetModelIsNotADrafterFile) {
  expect_one_line_error(kTarget, kTarget.string() + ": general.architecture is 'qwen3', expected 'dflash' (a DFlash "
                                                     "drafter GGUF)");
}

TEST(DFlash2Errors, HiddenSizeThatDoesNotFitTheTarget) {
  TempDir dir;
  Edit e;
  e.meta.emplace_back("dflash.embedding_length", gguf::Value::from_uint(gguf::ValueType::u32, 128));
  const fs::path f = edited_drafter(dir.path(), "embd.gguf", e);
  expect_one_line_error(f, f.string() + ": hidden size 128 (dflash.embedding_length) does not fit the target's 256: the "
                                        "drafter reads the target's hidden states and shares its embedding");
}

TEST(DFlash2Errors, VocabularyThatDoesNotFitTheTarget) {
  TempDir dir;
  Edit e;
  e.rows = [](const std::string& n) {
    return n.rfind("selector_", 0) == 0 && n != "selector_hidden.weight" ? std::optional<std::uint64_t>(300)
                                                                         : std::nullopt;
  };
  const fs::path f = edited_drafter(dir.path(), "vocab.gguf", e);
  expect_one_line_error(f, f.string() + ": vocabulary of 300 (selector_predecessor.weight rows) does not fit the "
                                        "target's 4096 tokens");
  Edit mask;
  mask.meta.emplace_back("tokenizer.ggml.mask_token_id", gguf::Value::from_uint(gguf::ValueType::u32, 5000));
  const fs::path m = edited_drafter(dir.path(), "mask.gguf", mask);
  expect_one_line_error(m, m.string() + ": tokenizer.ggml.mask_token_id 5000 is outside the target's vocabulary of "
                                        "4096 tokens");
}

TEST(DFlash2Errors, TargetLayerIdsOutOfRange) {
  TempDir dir;
  Edit e;
  std::vector<gguf::Value> ids;
  for (std::int64_t id : {1, 2, 9}) ids.push_back(gguf::Value::from_int(gguf::ValueType::i32, id));
  e.meta.emplace_back("dflash.target_layers", gguf::Value::from_array(gguf::ValueType::i32, ids));
  const fs::path f = edited_drafter(dir.path(), "layers.gguf", e);
  expect_one_line_error(f, f.string() + ": dflash.target_layers has layer 9, outside the target's 0..4 (llama.cpp's "
                                        "ids: 0 = the embeddings, 4 = the last layer's output)");
}

TEST(DFlash2Errors, MaxDraftBeyondTheBlockNamesTheBlockSize) {
  TempDir dir;
  const auto profile = dir.path() / "p.toml";
  std::ofstream(profile) << "[speculative]\nenabled = true\n\n[[drafter]]\nname = \"dflash2\"\nmodel = \""
                         << kDFlash.string() << "\"\nmax_draft = 9\n";
  auto r = run_command(std::string(GRAFT_EXE) + " run -m " + kTarget.string() + " -c 256 -t 1 -p x -n 4 --profile " +
                       profile.string());
  EXPECT_EQ(r.exit_code, 1) << r.output;
  EXPECT_NE(r.output.find(kDFlash.string() + ": max_draft = 9 needs a block of 10 rows, but dflash.block_size is 8\n"),
            std::string::npos)
      << r.output;
}
