// The speculative round (docs/speculative.md), as the TokenDecoder Session::generate steps with:
// drafters propose; their trees merge into one under the round's budget; the target verifies the
// whole tree in ONE forward pass (ancestor mask, positions n_past + depth); the walk keeps the
// path the target agrees with and its own next token (tree_walk.hpp: exact and lossless); the
// KV cache keeps the accepted rows only and every drafter is told what was committed, with the
// hidden states it asked for, from that same pass. Near the end of the context or of max_tokens
// the budget shrinks to nothing and a round is a plain decode step.
#pragma once

#include <memory>
#include <vector>

#include "engine/session.hpp"
#include "speculative/drafter_slot.hpp"
#include "speculative/fusion_model.hpp"
#include "speculative/spec_stats.hpp"
#include "speculative/token_tree.hpp"
#include "speculative/verify_cost.hpp"

namespace graft {

struct SpeculativeOptions {
  std::uint32_t max_nodes = 16;  // drafted tokens verified per round
  std::uint32_t max_depth = 8;   // longest path per round
  // Learn from every round (fusion_model.hpp, verify_cost.hpp): verify only as many drafted
  // nodes as pay for themselves, ask each drafter for as many tokens as pay, and skip a drafter
  // whose expected gain is below its own cost. Off: every drafter, every node the budget allows.
  bool adaptive = true;
  // Tokens asked of every drafter per round: 0 = learnt per drafter (with adaptive), N = pinned.
  std::uint32_t draft_length = 0;
};

class SpeculativeDecoder final : public TokenDecoder {
 public:
  // owners: what the drafters may still refer to (their factories, the DrafterHost they were made
  // with), kept alive as long as the decoder.
  SpeculativeDecoder(std::vector<DrafterSlot> drafters, const SpeculativeOptions& options,
                     std::shared_ptr<const void> owners = nullptr);

  Status prefill(Session& session, std::span<const TokenId> prompt) override;
  Status step(Session& session, Sampler& sampler, TokenId pending, std::uint32_t max_new,
              std::vector<TokenId>& out) override;

  const SpeculativeStats& stats() const { return stats_; }
  void clear_stats() { stats_.clear_counts(); }
  const std::vector<DrafterSlot>& drafters() const { return drafters_; }

 private:
  // The drafters' hidden states for rows `rows` of the last pass, token-major (drafter_slot.hpp).
  HiddenStates hidden_for(std::size_t d, const ForwardOutput& out, std::uint32_t n_rows,
                          std::span<const std::uint32_t> rows, std::uint32_t n_embd);
  void sync_stats();
  // Hands tokens context[first, size - 1) of the prompt piece in held_ (a pass of pass_rows rows,
  // the first of them these tokens') to every drafter's begin.
  void begin_drafters(std::span<const TokenId> context, std::uint32_t first, std::uint32_t pass_rows,
                      std::uint32_t n_embd);
  // Whether drafter d proposes this round, and how deep (fusion_model.hpp, docs/speculative.md).
  bool worth_drafting(std::size_t d);
  std::uint32_t draft_depth(std::size_t d, std::uint32_t max_depth) const;

  std::shared_ptr<const void> owners_;  // declared first: destroyed after the drafters
  std::vector<DrafterSlot> drafters_;
  SpeculativeOptions options_;
  // Taps the verify pass computes: the union of the drafters' (tap_of_[d] indexes it).
  std::vector<std::int32_t> taps_;
  bool normed_ = false;
  std::vector<std::vector<std::uint32_t>> tap_of_;

  // The prompt's last token reaches the drafters at the first step, as a commit of one token
  // (its pending token is the first sampled one); its hidden rows per drafter wait here. The
  // rest of the prompt reaches them in prefill, so their prompt work counts as prefill.
  bool last_prompt_token_pending_ = false;
  std::vector<std::vector<float>> last_prompt_hidden_;
  ForwardOutput held_;

  SpeculativeStats stats_;
  VerifyCost cost_;
  FusionModel fusion_;
  // Per drafter, decayed means of its propose() time and of the nodes it proposed.
  std::vector<double> propose_seconds_, proposed_nodes_;
  std::vector<char> proposed_last_;  // it proposed in the previous round
  std::vector<char> cost_seen_;      // propose_seconds_ holds a steady sample
  std::vector<std::uint64_t> probe_interval_, next_probe_;  // skipped drafters' probes (0: none due)
  std::uint64_t round_ = 0;  // rounds this decoder ran, all sequences (stats_ may be cleared)
  std::uint32_t starved_ = 0;  // rounds in a row that verified no draft although some were proposed
  std::uint32_t explore_ = 0;
  std::uint32_t widest_pass_ = 0;  // most rows of a verify pass so far
  std::vector<DraftTree> trees_;
  TokenTree tree_;
  std::vector<TokenId> context_, verify_tokens_;
  std::vector<std::int32_t> positions_;
  std::vector<std::uint8_t> mask_;
  std::vector<std::uint32_t> all_rows_;
  std::vector<float> hidden_buf_;
  ForwardOutput out_;
};

}  // namespace graft
