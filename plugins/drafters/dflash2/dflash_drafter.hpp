// The dflash2 drafter: a DFlash block-diffusion drafter GGUF (with graft's DFlash2 extras when
// the file has them) run over the target's hidden states of its declared layers, which arrive
// with every commit from the verify pass (no extra target pass). Each round one block pass
// proposes every slot at once; the slots' top candidates (re-scored by the DFlash2 selector
// when the file has one) become a tree, best first by path probability, under the round's
// budget; the block's length follows BlockPolicy. README.md in this folder has the keys.
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "block_choices.hpp"
#include "block_policy.hpp"
#include "dflash_pass.hpp"

namespace graft::dflash2 {

struct DrafterOptions {
  std::string model;             // the drafter GGUF
  std::uint32_t max_draft = 0;   // slots drafted per round (0: block_size - 1)
  std::uint32_t top_k = 2;       // children per node
  bool adaptive = true;          // BlockPolicy; false: always the long block
  std::uint32_t short_block = 0; // rows of the short block (0: half the long block, at least 2)
  bool selector = true;          // the file's DFlash2 selector, when it has one
  // After rounds the mix skipped this drafter, context K/V for at most this many of the queued
  // tokens (the latest); the block's attention skips the rest (drafts may differ, never the
  // output: the target verifies). Bounds what a resumed proposal costs. 0 = all (exact).
  std::uint32_t resume_window = 64;
};

class DFlashDrafter final : public Drafter {
 public:
  // The options are checked against the file (one line naming it and the numbers).
  static Expected<std::unique_ptr<DFlashDrafter>> create(const DrafterHost& host, std::shared_ptr<const DFlashFile> file,
                                                         const DrafterOptions& options);
  // What create() holds (DrafterFactory::memory), from a planning host and a file opened through it.
  static Expected<DrafterMemory> memory(const DrafterHost& host, const DFlashFile& file, const DrafterOptions& options);

  DrafterNeeds needs() const override;
  Status begin(const CommitInfo& info) override;
  Status propose(const DraftRequest& request, DraftTree& out) override;
  Status accept(const CommitInfo& info) override;
  Status truncate(std::uint32_t n) override;

  // The last proposal's block: slot logits [rows - 1][n_vocab] and the choices the tree came from
  // (for the fixture tests).
  const std::vector<float>& slot_logits() const noexcept { return pass_->logits(); }
  const BlockChoices& choices() const noexcept { return choices_; }
  const BlockPolicy& policy() const noexcept { return policy_; }

 private:
  // The options with max_draft's default filled in, or why they do not fit the file.
  static Expected<DrafterOptions> checked(const DFlashFile& file, const DrafterOptions& options);
  DFlashDrafter(std::shared_ptr<const DFlashFile> file, const DrafterOptions& o, const PolicyOptions& p);
  // Queues the commit's hidden states (context K/V run at the next proposal, as one batch).
  Status add(const CommitInfo& info);
  // Runs the queued context (the last `window` tokens of it when window > 0; the rest skipped).
  Status flush(std::uint32_t window);
  // Leaves the last `keep` queued tokens; the older ones get no K/V (skipped).
  void skip_queued(std::uint32_t keep);
  // Context tokens: those with K/V in the pass, then the queued ones.
  std::uint32_t held() const;
  Status truncate_context(std::uint32_t count);
  Status make_choices(std::int32_t anchor, std::uint32_t slots);

  std::shared_ptr<const DFlashFile> f_;
  DrafterOptions o_;
  std::unique_ptr<DFlashPass> pass_;
  BlockPolicy policy_;
  BlockChoices choices_;
  bool use_selector_ = false;
  // The round in flight: started by propose, its tokens known at accept, timed to the next propose.
  std::chrono::steady_clock::time_point proposed_at_{};
  bool proposed_ = false;
  std::uint32_t round_tokens_ = 0;           // committed by the last accept
  std::uint32_t rounds_since_proposal_ = 0;  // accepts since the last proposal
  std::vector<float> pending_;  // queued hidden-state rows, feature_width floats a token
  std::vector<float> prev_rows_, next_rows_;
};

}  // namespace graft::dflash2
