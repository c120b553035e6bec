// The `ngram` drafter plugin (model-free prompt lookup): its profile keys, the per-sequence
// drafter that keeps an NgramIndex in step with the sequence, its factory and the exported
// descriptor.
#include <algorithm>
#include <exception>
#include <new>
#include <optional>
#include <string>

#include "graft/graft.hpp"
#include "ngram_draft.hpp"
#include "ngram_index.hpp"

namespace graft::ngram {

namespace {

// No exception may cross the plugin boundary; after one the index may be half-updated, so the
// drafter starts over (the next call re-learns the whole context).
template <class F>
Status guarded(NgramIndex& index, std::uint32_t& committed, F&& body) noexcept {
  Status failure;
  try {
    body();
    return Status::success();
  } catch (const std::bad_alloc&) {
    failure = Status(Errc::out_of_memory, "ngram drafter: out of memory");
  } catch (const std::exception& e) {
    failure = Status(Errc::internal, std::string("ngram drafter: ") + e.what());
  } catch (...) {
    failure = Status(Errc::internal, "ngram drafter: unknown exception");
  }
  index.clear();
  committed = 0;
  return failure;
}

class NgramDrafter final : public Drafter {
 public:
  NgramDrafter(const DraftParams& params, std::uint32_t max_match) : params_(params), index_(max_match) {}

  DrafterNeeds needs() const override { return {}; }

  Status begin(const CommitInfo& info) override {
    return guarded(index_, committed_, [&] { commit(info); });
  }
  Status accept(const CommitInfo& info) override {
    return guarded(index_, committed_, [&] { commit(info); });
  }

  Status propose(const DraftRequest& request, DraftTree& out) override {
    Status s = guarded(index_, committed_, [&] {
      // Normally a no-op: the commits have brought the index up to date.
      sync(request.context, committed_);
      draft(index_, params_, request.max_nodes, request.max_depth, out, followers_);
    });
    if (!s.ok()) out.clear();
    return s;
  }

  Status truncate(std::uint32_t n) override {
    return guarded(index_, committed_, [&] {
      index_.truncate(n);
      committed_ = std::min(committed_, n);
    });
  }

 private:
  void commit(const CommitInfo& info) {
    sync(info.context, info.first);
    committed_ = info.n_committed;
  }

  // Brings the index to `context`. Tokens before `trusted` are committed and unchanged since the
  // index learned them, so only the tail is compared (the previous pending token, normally): the
  // cost is the new tokens, not the context.
  void sync(std::span<const std::int32_t> context, std::size_t trusted) {
    const auto known = index_.tokens();
    const std::size_t common = std::min(known.size(), context.size());
    std::size_t same = std::min(trusted, common);
    while (same < common && known[same] == context[same]) ++same;
    index_.truncate(same);
    index_.append(context.subspan(same));
  }

  DraftParams params_;
  NgramIndex index_;
  std::uint32_t committed_ = 0;     // the target's committed tokens, from the last commit
  std::vector<Follower> followers_;  // scratch for draft()
};

class NgramDrafterFactory final : public DrafterFactory {
 public:
  NgramDrafterFactory(const DraftParams& params, std::uint32_t max_match) : params_(params), max_match_(max_match) {}

  // No backend memory: its index lives on the host and grows with the sequence. Per token, at
  // most (vectors and the hash table at twice their need, NgramIndex::memory_bytes): the token,
  // max_match + 1 ends, as many trie nodes and, at load factor 1/4 after a doubling, four table
  // slots each.
  Expected<DrafterMemory> memory(const DrafterHost&) const override {
    DrafterMemory m;
    m.host_bytes_per_token = NgramIndex::bytes_per_token_at_most(max_match_);
    return m;
  }

  // Model-free: the host (target, KV stores, files) is not needed.
  Expected<std::unique_ptr<Drafter>> create(const DrafterHost&) override {
    try {
      return std::unique_ptr<Drafter>(new NgramDrafter(params_, max_match_));
    } catch (const std::bad_alloc&) {
      return Status(Errc::out_of_memory, "ngram drafter: out of memory");
    } catch (const std::exception& e) {
      return Status(Errc::internal, std::string("ngram drafter: ") + e.what());
    }
  }

 private:
  DraftParams params_;
  std::uint32_t max_match_;
};

const ConfigKeySpec kKeys[] = {
    {"min_match", ConfigType::integer,
     "shortest suffix of the context, in tokens, that must have occurred earlier for a proposal (default 2)", 1, 64},
    {"max_match", ConfigType::integer,
     "longest suffix looked up, in tokens; the longest one that occurred earlier is the one continued "
     "(default 8; at least min_match)",
     1, 64},
    {"max_draft", ConfigType::integer, "most tokens proposed along one branch (default 16)", 1, 64},
    {"max_branches", ConfigType::integer,
     "most sibling continuations proposed when earlier occurrences of the match continued differently (default 3)",
     1, 8},
};

// A key's value, its default when absent, or nullopt with `error` set. The host validates types
// and ranges before create; checking again keeps a direct caller from reaching the index.
std::optional<std::uint32_t> read_key(const Config& config, const ConfigKeySpec& spec, std::uint32_t fallback,
                                      Status& error) {
  if (!config.has(spec.key)) return fallback;
  const auto v = config.get_int(spec.key);
  if (!v) {
    error = Status(Errc::invalid_argument, std::string(spec.key) + " must be an integer");
    return std::nullopt;
  }
  if (static_cast<double>(*v) < spec.min || static_cast<double>(*v) > spec.max) {
    error = Status(Errc::invalid_argument, std::string(spec.key) + " = " + std::to_string(*v) + " is outside " +
                                               std::to_string(static_cast<std::int64_t>(spec.min)) + ".." +
                                               std::to_string(static_cast<std::int64_t>(spec.max)));
    return std::nullopt;
  }
  return static_cast<std::uint32_t>(*v);
}

PluginObject* create(const HostServices&, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    const std::uint32_t defaults[] = {2, 8, 16, 3};  // in kKeys order
    static_assert(std::size(defaults) == std::size(kKeys));
    std::uint32_t v[std::size(kKeys)];
    for (std::size_t i = 0; i < std::size(kKeys); ++i) {
      const auto value = read_key(config, kKeys[i], defaults[i], error);
      if (!value) return nullptr;
      v[i] = *value;
    }
    const std::uint32_t min_match = v[0], max_match = v[1], max_draft = v[2], max_branches = v[3];
    if (max_match < min_match) {
      error = Status(Errc::invalid_argument, "max_match = " + std::to_string(max_match) +
                                                 " must be at least min_match = " + std::to_string(min_match));
      return nullptr;
    }
    return new NgramDrafterFactory(DraftParams{min_match, max_draft, max_branches}, max_match);
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION,
    sizeof(PluginDescriptor),
    PluginKind::drafter,
    "ngram",
    GRAFT_SDK_VERSION_STRING,
    "model-free prompt lookup: continues the longest context suffix that occurred earlier (chain or tree)",
    kKeys,
    std::size(kKeys),
    &create,
};

}  // namespace

}  // namespace graft::ngram

GRAFT_PLUGIN(graft::ngram::kDescriptor)
