// A drafter proposes a chain or tree of candidate tokens; the target verifies all of it in one
// forward pass and keeps the longest path it agrees with (docs/speculative.md). The host calls a
// drafter in this order for a sequence: begin() once or more for the prompt, then rounds of
// propose() and accept(); truncate() when the sequence is cut back (a new prompt, an edit).
// Every call is guarded by the host: an error status or exception disables the drafter for the
// sequence (or skips its proposal for one round) with one warning line, never changing output.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "graft/config.hpp"
#include "graft/kv_store.hpp"
#include "graft/model_view.hpp"
#include "graft/plugin_object.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// Nodes in topological order: parents[i] < i, or -1 for a child of the context's last token (the
// one the target has not run yet). A chain is the tree where parents[i] == i - 1.
struct DraftTree {
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> parents;
  // The drafter's probability of each node's token given its parent, in (0, 1]: the host merges
  // trees and spends its node budget by path probability (the product along the path), and
  // reports it in metrics. 1 when the drafter has no probabilities.
  std::vector<float> q;
  // Where a node's token was drawn AT RANDOM from a distribution: the index of that distribution
  // (n_vocab floats) in `distributions`, else -1. Sampling then accepts the node by rejection
  // (min(1, p/q), residual max(0, p - q)), which keeps more drafts than sample-and-match. A node
  // picked deterministically (argmax, a copy, top-k) must say -1: the host then samples the target
  // and matches, which is lossless whatever the drafter chose. Greedy decoding ignores them.
  std::vector<std::int32_t> dist;
  std::vector<float> distributions;

  std::size_t size() const noexcept { return tokens.size(); }
  void clear() {
    tokens.clear();
    parents.clear();
    q.clear();
    dist.clear();
    distributions.clear();
  }
  void add(std::int32_t token, std::int32_t parent, float prob = 1.0f, std::int32_t distribution = -1) {
    tokens.push_back(token);
    parents.push_back(parent);
    q.push_back(prob);
    dist.push_back(distribution);
  }
  // Depth of node i: 1 for a child of the context's last token.
  std::uint32_t depth(std::size_t i) const noexcept {
    std::uint32_t d = 0;
    for (std::int32_t n = static_cast<std::int32_t>(i); n >= 0; n = parents[static_cast<std::size_t>(n)]) ++d;
    return d;
  }
  // Why the tree is malformed, or nullptr: lengths, parent order, token ids in [0, n_vocab), q in
  // (0, 1], distribution indices, and a drawn token with probability 0 in its distribution.
  const char* invalid(std::uint32_t n_vocab) const noexcept {
    const std::size_t n = tokens.size();
    if (parents.size() != n || q.size() != n || dist.size() != n) return "its arrays differ in length";
    if (n_vocab == 0 || distributions.size() % n_vocab != 0) return "distributions is not a whole number of n_vocab rows";
    const std::size_t n_dist = distributions.size() / n_vocab;
    for (std::size_t i = 0; i < n; ++i) {
      if (parents[i] < -1 || parents[i] >= static_cast<std::int32_t>(i)) return "a parent does not precede its child";
      if (tokens[i] < 0 || static_cast<std::uint32_t>(tokens[i]) >= n_vocab) return "a token id is outside the vocabulary";
      if (!(q[i] > 0.0f && q[i] <= 1.0f)) return "a probability q is outside (0, 1]";
      if (dist[i] < -1 || (dist[i] >= 0 && static_cast<std::size_t>(dist[i]) >= n_dist))
        return "a distribution index is out of range";
      if (dist[i] >= 0 && !(distributions[static_cast<std::size_t>(dist[i]) * n_vocab + tokens[i]] > 0.0f))
        return "a drawn token has probability 0 in its distribution";
    }
    for (float v : distributions)
      if (!(v >= 0.0f) || !std::isfinite(v)) return "a distribution has a negative or non-finite entry";
    return nullptr;
  }
  bool valid(std::uint32_t n_vocab) const noexcept { return invalid(n_vocab) == nullptr; }
};

// Which target activations the drafter wants with every commit, from the verify pass that
// produced them (no extra target pass). Tap ids follow llama.cpp: id L is the input of layer L
// (0 = the token embeddings), id n_layers the final output before output_norm.
struct DrafterNeeds {
  std::vector<std::int32_t> taps;
  bool normed_output = false;  // also the final output after output_norm (what MTP heads read)
  // The drafter reads HiddenStates in backend memory (it runs its layers on the target's backend):
  // on a GPU they then never leave it. false: host memory (copied back once per pass).
  bool hidden_in_backend_memory = false;
};

// Hidden states of consecutive committed tokens, token-major: row r holds, for token r, the taps
// in DrafterNeeds::taps order and then the normed output if asked, n_embd floats each
// ([n_tokens][n_per_token][n_embd]): the concatenation a DFlash fc layer reads. Valid during the
// call; in host memory, or in the backend's where DrafterNeeds::hidden_in_backend_memory asks.
struct HiddenStates {
  std::uint32_t n_tokens = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_per_token = 0;
  const float* data = nullptr;
  MemoryKind memory = MemoryKind::host;
};

// Tokens that entered the target's KV cache, and the context after them.
struct CommitInfo {
  // The whole sequence: context[0, n_committed) is in the target's KV cache, and the one token
  // after them (context.back()) is the pending token, emitted but not yet run by the target.
  std::span<const std::int32_t> context;
  std::uint32_t n_committed = 0;
  // This call's tokens are context[first, n_committed); `hidden` has one row for each.
  std::uint32_t first = 0;
  HiddenStates hidden;
  // accept() only: the proposed tree's nodes on the accepted path, root first (may be empty), and
  // the size of the merged tree the host verified (which holds other drafters' nodes too).
  std::span<const std::int32_t> accepted_nodes;
  std::uint32_t verified_nodes = 0;
};

struct DraftRequest {
  std::span<const std::int32_t> context;  // committed tokens, then the pending one (last)
  std::uint32_t max_nodes = 0;            // the tree may have at most this many nodes
  std::uint32_t max_depth = 0;            // ... and no node deeper than this
  // The target samples (temperature > 0): a token drawn from the drafter's distribution (dist)
  // is accepted by rejection; when false (greedy) only the argmax path can be accepted.
  bool sampling = false;
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual DrafterNeeds needs() const = 0;
  // The prompt (or more of it): called after each prefill piece, first == the previous call's
  // n_committed (0 for a new sequence, after truncate(0)).
  virtual Status begin(const CommitInfo& info) = 0;
  // Appends at most max_nodes nodes to out (which arrives empty). An empty tree is a valid answer.
  virtual Status propose(const DraftRequest& request, DraftTree& out) = 0;
  // After the verify pass: the tokens it committed (the pending token of the round, then the
  // accepted path) with their hidden states; context.back() is the target's own next token.
  // accepted_nodes index THIS drafter's last tree (its nodes on the path, mapped by the host).
  virtual Status accept(const CommitInfo& info) = 0;
  // Forget everything after the first n committed tokens (0: a new sequence).
  virtual Status truncate(std::uint32_t n) = 0;
};

// What a drafter will hold in backend memory, said before anything is loaded (DrafterFactory::
// memory), so the host's memory plan (graft plan, --ctx auto, the refusal before loading) counts
// it. Weights and block runners are counted by the host from the calls memory() makes (below);
// the rest the drafter reports here.
struct DrafterMemory {
  // Whether the weights it binds through weight() are bound once for every sequence of a target
  // (a drafter file opened once and shared), else once per sequence (per create()).
  bool shared_weights = false;
  // Per sequence: its own KV cache, the geometry it passes to new_kv_store, whose capacity is
  // the target's context + kv_extra (n_layers == 0: none) ...
  KvGeometry kv{};
  std::uint32_t kv_extra = 0;
  // ... its own buffers in backend memory (Backend::allocate), ...
  std::uint64_t buffer_bytes = 0;
  // ... host memory that grows with the context (an index of its tokens), at most, per token ...
  std::uint64_t host_bytes_per_token = 0;
  // ... and, for each block runner memory() made (in that order), the blocks it runs: a runner
  // binds its blocks' weights on first use, so the host counts those weights per sequence.
  std::vector<std::vector<std::uint32_t>> runner_blocks;
  // What its needs() will say: the host plans the buffers its verify passes keep the taps in.
  DrafterNeeds needs;
};

// What the host gives a factory to build a drafter for one target. While planning
// (DrafterFactory::memory) the same interface describes a target that is not loaded:
// target() and open_file() give metadata, tensor names and weights whose view() has the file's
// shape and type but no data (matmul and get_rows fail), runner() makes runners that count their
// workspace and run nothing, tokenize() fails, context_capacity() is 0 and new_kv_store() fails.
// The host counts every weight() and runner() call made through it.
class DrafterHost {
 public:
  virtual ~DrafterHost() = default;
  virtual const ModelView& target() const = 0;
  // The target's KV capacity in tokens (the drafter's own caches need no more).
  virtual std::uint32_t context_capacity() const = 0;
  // A KV store of the profile's KV plugin on the target's backend, for the drafter's own layers.
  // Destroy it with the drafter.
  virtual Expected<std::unique_ptr<KvStore>> new_kv_store(const KvGeometry& geometry) const = 0;
  // A drafter GGUF by path (relative paths against the profile's folder), validated like the main
  // model (header, tensor bounds, types of the loaded weight formats); its weights bind to the
  // target's backend. Errors are one line naming the file.
  virtual Expected<std::unique_ptr<WeightFile>> open_file(std::string_view path) const = 0;
};

class DrafterFactory : public PluginObject {
 public:
  // One drafter per sequence; the host may create several over one target.
  virtual Expected<std::unique_ptr<Drafter>> create(const DrafterHost& host) = 0;
  // What create() would hold, from a planning host (see DrafterHost): memory() makes the weight()
  // and runner() calls create() makes and reports the rest. A drafter file is opened through
  // host.open_file() as create() opens it; files shared by the sequences of one target count once.
  // The default says nothing: the host's plan then lists the drafter as not counted.
  virtual Expected<DrafterMemory> memory(const DrafterHost& host) const {
    (void)host;
    return Status(Errc::not_implemented, "this drafter does not report its memory");
  }
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
