// A cost-realistic benchmark target made from a small model: N inert layers added after its last
// main layer. Each is a copy of that layer whose attn_output and ffn_down weights (and biases) are
// exact zeros, so it reads and multiplies all its weights, writes its KV cache, and adds exactly
// nothing to the residual stream: greedy output, the final hidden state, an MTP (nextn) block and
// the hidden-state taps of a DFlash drafter (ids <= the original layer count) stay what they were,
// while a decode step costs what a model of that many layers costs. A benchmark harness, not a
// model: the file says so in general.name and graft.bench.inert_layers.
#pragma once

#include <cstdint>
#include <filesystem>

#include "graft/status.hpp"

namespace graft::bench {

struct PaddingReport {
  std::uint32_t main_layers = 0;   // before padding
  std::uint32_t nextn_layers = 0;  // MTP blocks, moved to the end
  std::uint64_t bytes_added = 0;   // tensor bytes of the inert layers
};

// Writes `out`: `in` with `n_inert` inert layers after its last main layer (nextn blocks renamed
// to follow them). Errors are one line: a file graft cannot read, an architecture whose metadata
// has per-layer arrays (their entries for the new layers would have to be invented).
Expected<PaddingReport> pad_with_inert_layers(const std::filesystem::path& in, const std::filesystem::path& out,
                                             std::uint32_t n_inert);

}  // namespace graft::bench
