// The ngram drafter plugin through its C entry point, as the host loads it: the descriptor, its
// profile keys and their errors, and a drafter driven through begin/propose/accept/truncate
// whose every proposal must equal the tree built directly from an index of the same context.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <random>
#include <stdexcept>
#include <string>

#include "graft/graft.hpp"
#include "ngram_draft.hpp"
#include "ngram_index.hpp"
#include "ngram_reference.hpp"

using namespace graft;
using ngramtest::Tokens;

namespace {

const PluginDescriptor* descriptor() {
  static const PluginDescriptor* desc = [] {
    // Never closed: the objects the tests create must not outlive their code.
    void* handle = dlopen(NGRAM_PLUGIN_FILE, RTLD_NOW | RTLD_LOCAL);
    if (!handle) throw std::runtime_error(std::string("dlopen: ") + dlerror());
    auto* entry = reinterpret_cast<DescriptorFn*>(dlsym(handle, GRAFT_PLUGIN_SYMBOL));
    if (!entry) throw std::runtime_error("no graft_plugin symbol");
    return entry();
  }();
  return desc;
}

class QuietHost final : public HostServices {
 public:
  unsigned abi_version() const noexcept override { return GRAFT_ABI_VERSION; }
  void log(LogLevel, std::string_view, std::string_view) const noexcept override {}
  const WeightFormat* weight_format(TypeId) const noexcept override { return nullptr; }
  FormatKernels* format_kernels(TypeId, std::string_view) const noexcept override { return nullptr; }
  KernelLibrary* kv_store_library(std::string_view, std::string_view) const noexcept override { return nullptr; }
};

// A model-free drafter must not touch the target, KV stores or files.
class UntouchableDrafterHost final : public DrafterHost {
 public:
  const ModelView& target() const override { throw std::logic_error(touched("target")); }
  std::uint32_t context_capacity() const override { throw std::logic_error(touched("context_capacity")); }
  Expected<std::unique_ptr<KvStore>> new_kv_store(const KvGeometry&) const override {
    return Status(Errc::internal, touched("new_kv_store"));
  }
  Expected<std::unique_ptr<WeightFile>> open_file(std::string_view) const override {
    return Status(Errc::internal, touched("open_file"));
  }

 private:
  static std::string touched(const char* what) {
    ADD_FAILURE() << "the ngram drafter called DrafterHost::" << what;
    return std::string("DrafterHost::") + what + " called";
  }
};

// The factory for `config`, or the plugin's error.
Expected<std::unique_ptr<DrafterFactory>> make_factory(const Config& config) {
  Status error;
  PluginObject* obj = descriptor()->create(QuietHost{}, config, error);
  if (!obj) return error.ok() ? Status(Errc::internal, "null factory without an error") : error;
  // The descriptor's kind fixes the interface, as the host's loader assumes.
  return std::unique_ptr<DrafterFactory>(static_cast<DrafterFactory*>(obj));
}

std::string create_error(const Config& config) {
  auto f = make_factory(config);
  return f ? std::string("(created)") : f.status().message();
}

TEST(NgramPlugin, Descriptor) {
  const PluginDescriptor* d = descriptor();
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->abi_version, static_cast<std::uint32_t>(GRAFT_ABI_VERSION));
  EXPECT_EQ(d->struct_size, sizeof(PluginDescriptor));
  EXPECT_EQ(d->kind, PluginKind::drafter);
  EXPECT_STREQ(d->name, "ngram");
  EXPECT_STREQ(d->stdlib, GRAFT_STDLIB_TAG);
  EXPECT_STREQ(d->sdk_hash, GRAFT_SDK_HEADER_HASH);
  EXPECT_NE(d->create, nullptr);
  ASSERT_EQ(d->n_config_keys, 4u);
  struct Want {
    const char* key;
    double min, max;
  };
  const Want want[] = {{"min_match", 1, 64}, {"max_match", 1, 64}, {"max_draft", 1, 64}, {"max_branches", 1, 8}};
  for (std::uint32_t i = 0; i < 4; ++i) {
    const ConfigKeySpec& k = d->config_keys[i];
    EXPECT_STREQ(k.key, want[i].key);
    EXPECT_EQ(k.type, ConfigType::integer) << k.key;
    EXPECT_EQ(k.min, want[i].min) << k.key;
    EXPECT_EQ(k.max, want[i].max) << k.key;
    EXPECT_FALSE(k.required) << k.key;
    EXPECT_GT(std::string(k.description).size(), 10u) << k.key;
  }
}

TEST(NgramPlugin, ConfigErrors) {
  Config c;
  c.set("min_match", std::int64_t{5});
  c.set("max_match", std::int64_t{3});
  EXPECT_EQ(create_error(c), "max_match = 3 must be at least min_match = 5");
  Config only_max;
  only_max.set("max_match", std::int64_t{1});  // below the default min_match
  EXPECT_EQ(create_error(only_max), "max_match = 1 must be at least min_match = 2");
  Config range;
  range.set("max_draft", std::int64_t{0});
  EXPECT_EQ(create_error(range), "max_draft = 0 is outside 1..64");
  Config branches;
  branches.set("max_branches", std::int64_t{9});
  EXPECT_EQ(create_error(branches), "max_branches = 9 is outside 1..8");
  Config type;
  type.set("min_match", std::string("two"));
  EXPECT_EQ(create_error(type), "min_match must be an integer");
  Config equal;
  equal.set("min_match", std::int64_t{4});
  equal.set("max_match", std::int64_t{4});
  EXPECT_EQ(create_error(equal), "(created)");
  EXPECT_EQ(create_error(Config{}), "(created)");
}

// Drives a drafter as the engine does over `truth` (the text the target would produce), greedy
// verification: each round's accepted path is the longest one that agrees with truth. Every
// proposal is compared with draft() on a fresh index of the same context.
class Driver {
 public:
  Driver(Drafter& d, const ngram::DraftParams& p, std::uint32_t max_match) : d_(d), p_(p), max_match_(max_match) {}

  // Prefill of truth[0, n_committed) in pieces, truth[n_committed] pending.
  void prefill(const Tokens& truth, std::uint32_t first, std::uint32_t n_committed) {
    truth_ = truth;
    for (std::uint32_t at = first; at < n_committed;) {
      const std::uint32_t next = std::min(n_committed, at + 97);
      ASSERT_TRUE(d_.begin(info(at, next)).ok());
      at = next;
    }
    committed_ = n_committed;
  }

  // Rounds until truth runs out; returns the tokens accepted from proposals.
  std::uint32_t rounds(std::uint32_t max_nodes, std::uint32_t max_depth) {
    std::uint32_t accepted_total = 0;
    while (committed_ + 1 + max_depth < truth_.size()) {
      const std::span<const std::int32_t> ctx(truth_.data(), committed_ + 1);
      DraftTree tree;
      EXPECT_TRUE(d_.propose(DraftRequest{ctx, max_nodes, max_depth}, tree).ok());
      ngram::NgramIndex fresh(max_match_);
      fresh.append(ctx);
      DraftTree want;
      std::vector<ngram::Follower> scratch;
      draft(fresh, p_, max_nodes, max_depth, want, scratch);
      EXPECT_EQ(tree.tokens, want.tokens) << "at " << committed_;
      EXPECT_EQ(tree.parents, want.parents) << "at " << committed_;
      EXPECT_EQ(tree.q, want.q) << "at " << committed_;
      EXPECT_TRUE(tree.valid(1u << 20));
      if (::testing::Test::HasFailure()) return accepted_total;
      // Greedy verification: walk the tree along truth.
      std::vector<std::int32_t> path;
      std::int32_t parent = -1;
      for (bool found = true; found;) {
        found = false;
        for (std::size_t i = 0; i < tree.size(); ++i)
          if (tree.parents[i] == parent && tree.tokens[i] == truth_[committed_ + 1 + path.size()]) {
            path.push_back(static_cast<std::int32_t>(i));
            parent = static_cast<std::int32_t>(i);
            found = true;
            break;
          }
      }
      const auto first = committed_;
      committed_ += 1 + static_cast<std::uint32_t>(path.size());
      CommitInfo ci = info(first, committed_);
      ci.accepted_nodes = path;
      ci.verified_nodes = static_cast<std::uint32_t>(tree.size());
      EXPECT_TRUE(d_.accept(ci).ok());
      accepted_total += static_cast<std::uint32_t>(path.size());
    }
    return accepted_total;
  }

  std::uint32_t committed() const { return committed_; }

 private:
  CommitInfo info(std::uint32_t first, std::uint32_t n_committed) const {
    CommitInfo ci;
    ci.context = std::span<const std::int32_t>(truth_.data(), n_committed + 1);
    ci.n_committed = n_committed;
    ci.first = first;
    return ci;
  }

  Drafter& d_;
  ngram::DraftParams p_;
  std::uint32_t max_match_;
  Tokens truth_;
  std::uint32_t committed_ = 0;
};

TEST(NgramPlugin, DrafterFollowsTheSequence) {
  auto factory = make_factory(Config{});
  ASSERT_TRUE(factory) << factory.status().message();
  UntouchableDrafterHost host;
  auto drafter = (*factory)->create(host);
  ASSERT_TRUE(drafter) << drafter.status().message();
  Drafter& d = **drafter;
  EXPECT_TRUE(d.needs().taps.empty());
  EXPECT_FALSE(d.needs().normed_output);

  std::mt19937 rng(9);
  const Tokens truth = ngramtest::repetitive_stream(rng, 3000, 500, 40, 0.02);
  Driver drive(d, ngram::DraftParams{2, 16, 3}, 8);
  drive.prefill(truth, 0, 400);
  const std::uint32_t accepted = drive.rounds(24, 10);
  ASSERT_FALSE(HasFailure());
  // A repeated 40-token motif: most rounds copy it right.
  EXPECT_GT(accepted, 1000u);

  // An edit: cut back to 1000 tokens and continue with other text (the prefill of the new part).
  ASSERT_TRUE(d.truncate(1000).ok());
  Tokens edited(truth.begin(), truth.begin() + 1000);
  const Tokens other = ngramtest::repetitive_stream(rng, 1500, 500, 25, 0.02);
  edited.insert(edited.end(), other.begin(), other.end());
  drive.prefill(edited, 1000, 1300);
  drive.rounds(8, 16);
  ASSERT_FALSE(HasFailure());

  // A new sequence on the same drafter.
  ASSERT_TRUE(d.truncate(0).ok());
  drive.prefill(other, 0, 200);
  drive.rounds(5, 3);
}

void expect_proposes_like_fresh(Drafter& d, std::span<const std::int32_t> context, const ngram::DraftParams& p,
                                std::uint32_t max_match) {
  DraftTree tree;
  ASSERT_TRUE(d.propose(DraftRequest{context, 16, 16}, tree).ok());
  ngram::NgramIndex fresh(max_match);
  fresh.append(context);
  DraftTree want;
  std::vector<ngram::Follower> scratch;
  draft(fresh, p, 16, 16, want, scratch);
  EXPECT_EQ(tree.tokens, want.tokens);
  EXPECT_EQ(tree.q, want.q);
  EXPECT_FALSE(tree.tokens.empty());
}

TEST(NgramPlugin, ConfiguredDrafterAndOutOfStepCalls) {
  Config c;
  c.set("min_match", std::int64_t{1});
  c.set("max_match", std::int64_t{4});
  c.set("max_draft", std::int64_t{3});
  c.set("max_branches", std::int64_t{1});
  auto factory = make_factory(c);
  ASSERT_TRUE(factory) << factory.status().message();
  UntouchableDrafterHost host;
  auto drafter = (*factory)->create(host);
  ASSERT_TRUE(drafter);
  std::mt19937 rng(3);
  const Tokens truth = ngramtest::random_stream(rng, 1500, 6);
  Driver drive(**drafter, ngram::DraftParams{1, 3, 1}, 4);
  drive.prefill(truth, 0, 300);
  drive.rounds(16, 16);
  ASSERT_FALSE(HasFailure());

  // propose() whose pending token is not the one the last commit announced: the drafter follows
  // the request.
  Tokens changed(truth.begin(), truth.begin() + drive.committed() + 1);
  changed.back() = (changed.back() + 1) % 6;
  expect_proposes_like_fresh(**drafter, changed, {1, 3, 1}, 4);

  // propose() with tokens the commits never announced (a host that skipped an accept): the
  // drafter learns them from the request.
  const std::size_t n = std::min<std::size_t>(drive.committed() + 1 + 9, truth.size());
  expect_proposes_like_fresh(**drafter, std::span<const std::int32_t>(truth.data(), n), {1, 3, 1}, 4);

  // begin() of a new sequence without truncate(0) first: the drafter finds where the sequences
  // part and follows the new one.
  Tokens other(truth.begin(), truth.begin() + 100);
  const Tokens tail = ngramtest::random_stream(rng, 600, 6);
  other.insert(other.end(), tail.begin(), tail.end());
  CommitInfo ci;
  ci.context = std::span<const std::int32_t>(other.data(), 500);
  ci.n_committed = 499;
  ASSERT_TRUE((*drafter)->begin(ci).ok());
  expect_proposes_like_fresh(**drafter, ci.context, {1, 3, 1}, 4);
}

}  // namespace
