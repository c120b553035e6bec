// A drafter proposes a chain or tree of candidate tokens for the target to verify in one pass.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graft/config.hpp"
#include "graft/model_view.hpp"
#include "graft/plugin_object.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

// Nodes in topological order; parents[i] < i, or -1 for a child of the last committed token.
// A chain is the tree where parents[i] == i - 1.
struct DraftTree {
  std::vector<std::int32_t> tokens;
  std::vector<std::int32_t> parents;
  std::vector<float> scores;  // drafter confidence in (0, 1], used to merge and budget trees

  std::size_t size() const noexcept { return tokens.size(); }
  void clear() { tokens.clear(); parents.clear(); scores.clear(); }
  void add(std::int32_t token, std::int32_t parent, float score = 1.0f) {
    tokens.push_back(token);
    parents.push_back(parent);
    scores.push_back(score);
  }
  bool valid() const noexcept {
    if (parents.size() != tokens.size() || scores.size() != tokens.size()) return false;
    for (std::size_t i = 0; i < parents.size(); ++i)
      if (parents[i] < -1 || parents[i] >= static_cast<std::int32_t>(i)) return false;
    return true;
  }
};

// Which target activations the drafter needs handed over after each verify pass.
struct DrafterNeeds {
  bool last_hidden = false;             // final hidden state after output_norm (MTP)
  std::vector<std::int32_t> layers;     // outputs of these target layers (DFlash: several)
};

struct DraftRequest {
  std::span<const std::int32_t> context;  // every committed token, prompt included
  std::uint32_t max_nodes = 0;
  std::uint32_t max_depth = 0;
};

// Hidden states of the committed tokens of one round: [n_embd, n_tokens] per requested layer,
// layer-major, in DrafterNeeds::layers order (last_hidden, if asked, comes last).
struct HiddenStates {
  std::uint32_t n_tokens = 0;
  std::uint32_t n_embd = 0;
  std::uint32_t n_layers = 0;
  const float* data = nullptr;
};

struct AcceptInfo {
  std::span<const std::int32_t> committed;  // tokens committed this round (accepted + bonus)
  std::uint32_t n_context = 0;              // context length after the round
  std::span<const std::int32_t> accepted_nodes;  // indices into the proposed tree, root first
  HiddenStates hidden;                      // empty unless needs() asked
};

class Drafter {
 public:
  virtual ~Drafter() = default;
  virtual DrafterNeeds needs() const = 0;
  // Appends at most max_nodes nodes to out (which arrives empty). An empty tree is a valid answer.
  virtual Status propose(const DraftRequest& request, DraftTree& out) = 0;
  virtual Status accept(const AcceptInfo& info) = 0;
  // Forget all state (new sequence).
  virtual Status reset() = 0;
};

class DrafterFactory : public PluginObject {
 public:
  virtual Expected<std::unique_ptr<Drafter>> create(const ModelView& target) = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
