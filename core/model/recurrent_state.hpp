// One sequence's recurrent state for the delta-net layers of a hybrid model (qwen35): per such
// layer its conv window, [Kc - 1, C] (each channel's last Kc - 1 raw inputs, oldest first), and its
// delta state, [Dk, Dv, Hv] (qwen35.md section 6), in backend memory so that a GPU backend holds it
// on the device. The attention layers keep their K and V in the sequence's KV store as for any
// model; the two together are the sequence's memory (docs/architecture.md, "Per-sequence state").
//
// Unlike a KV cache, the state cannot be cut back: it is the sum of every token so far. So it
// tracks how many tokens it has consumed (position()), and a pass over a token tree leaves it as
// it is and keeps, per delta-net layer and row, what moves a state on by that row: the raw conv
// input, the row's normalised k, its decay g and its update d (gated_delta_net's deltas).
// Accepting a path of the tree (Model::commit_recurrent) only records the path: the next pass
// applies it to each layer's state just before reading it (delta_net_apply: no dot products, the
// state read and written once, as a decode step does), so a speculative round costs no separate
// sweep over the state; the bits are those of decoding the rows one by one.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "graft/backend.hpp"
#include "graft/status.hpp"
#include "model/model_params.hpp"

namespace graft {

class RecurrentState {
 public:
  // State for every delta-net layer of p, zeroed (position 0), and room for the rows of a token
  // tree of up to max_pending rows.
  static Expected<std::unique_ptr<RecurrentState>> create(Backend& backend, const ModelParams& p,
                                                          std::uint32_t max_pending);
  // The bytes create() allocates: the state itself (ModelParams::recurrent_state_floats) and the
  // pending rows.
  static std::uint64_t bytes_for(const ModelParams& p, std::uint32_t max_pending);

  std::uint32_t layers() const { return layers_; }
  std::uint64_t bytes() const { return bytes_; }
  // Tokens the state has consumed: the first position() tokens of its sequence; kUnknown after a
  // pass that failed half-way (the owner rebuilds it: Session).
  static constexpr std::uint32_t kUnknown = 0xffffffffu;
  std::uint32_t position() const { return position_; }
  void set_position(std::uint32_t n) { position_ = n; }

  // Layer `i` (its index among the delta-net layers) of the state.
  TensorView conv(std::uint32_t i) const;   // [Kc - 1, C]
  TensorView delta(std::uint32_t i) const;  // [Dk, Dv, Hv]

  // The rows of the last pass over a token tree, kept for commit: their parents (-1: the state)
  // and, per layer, the raw conv input x [C, rows], k [Dk, Hk, rows] (normalised), the log decay
  // g [Hv, rows] and the update d [Dv, Hv, rows].
  std::uint32_t max_pending() const { return max_pending_; }
  std::span<const std::int32_t> pending_parents() const { return pending_parents_; }
  void set_pending(std::span<const std::int32_t> parents) { pending_parents_.assign(parents.begin(), parents.end()); }
  void clear_pending() { pending_parents_.clear(); }
  float* pending_x(std::uint32_t i) const;
  float* pending_k(std::uint32_t i) const;
  float* pending_g(std::uint32_t i) const;
  float* pending_d(std::uint32_t i) const;

  // A path of the kept tree (rows ascending, each the parent of the next) accepted but not yet
  // applied to the layers' windows and states; position() counts it already. The kept rows stay
  // until every layer has applied it (the next pass, or Model::settle_recurrent).
  std::span<const std::uint32_t> deferred() const { return deferred_; }
  // The deferred path in backend memory (i32, one per row), for the kernels that apply it.
  TensorView deferred_rows() const;
  // Records the path and copies it to backend memory (between passes: a blocking copy).
  Status defer(std::span<const std::uint32_t> path);
  void clear_deferred() { deferred_.clear(); }

  // Back to position 0: every window and state zero, nothing pending or deferred.
  Status zero();
  // This state becomes `from`'s (same model; nothing pending is copied). `from` must have no
  // deferred path (settle it first).
  Status copy_from(const RecurrentState& from);

 private:
  RecurrentState() = default;
  std::uint64_t layer_floats() const { return conv_floats_ + delta_floats_; }
  // Floats of one kept row of one layer of p: x, k, g and d.
  static std::uint64_t pending_row_floats(const ModelParams& p);

  Backend* backend_ = nullptr;
  std::unique_ptr<Buffer> buffer_;
  float* base_ = nullptr;      // the state: per layer conv then delta
  float* pending_ = nullptr;   // per layer x, k, g, d of max_pending rows
  std::int32_t* path_ = nullptr;  // the deferred path, max_pending entries after the pending rows
  std::uint32_t layers_ = 0, max_pending_ = 0, position_ = 0;
  std::uint64_t conv_floats_ = 0, delta_floats_ = 0, channels_ = 0, heads_ = 0, k_heads_ = 0, pending_row_ = 0,
                bytes_ = 0;
  std::int64_t kc_ = 0, dk_ = 0, dv_ = 0;
  std::vector<std::int32_t> pending_parents_;
  std::vector<std::uint32_t> deferred_;
};

}  // namespace graft
