// Where a `sysram` store keeps the slots of one sequence, the same in every layer: all of them in
// system RAM (written through as the device writes them), the newest also on the device, in a
// window of slots [base, end) at device rows [0, end - base). The window has room for
// `window + chunk` rows; when a write would pass that, `base` moves forward by whole chunks and
// the rows kept move down. Attention reads [base, ...) on the device and the older slots from
// system RAM, in pieces. Rollback below `base` refills the window from system RAM. The rules and
// the byte moves are here, once, for every backend's sysram store (the emulated device's in the
// tests; the CUDA one is not written yet); the stores move the bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "graft/status.hpp"

namespace graft::kv {

struct SlotRange {
  std::uint32_t begin = 0, end = 0;
  std::uint32_t size() const noexcept { return end - begin; }
  bool operator==(const SlotRange&) const = default;
};

class OffloadWindow {
 public:
  // capacity: slots per sequence; window: slots the device keeps (at least); chunk: how far the
  // window moves at a time, and the most slots one write may add.
  OffloadWindow(std::uint32_t capacity, std::uint32_t window, std::uint32_t chunk)
      : capacity_(capacity), window_(window), chunk_(chunk) {}

  std::uint32_t base() const noexcept { return base_; }
  // Device rows per head and layer: the window and a chunk (a context smaller than that is
  // simply all on the device).
  std::uint32_t device_rows() const noexcept { return std::min(capacity_, window_ + chunk_); }
  std::uint32_t chunk() const noexcept { return chunk_; }

  // Before a write of slots [slot, slot + n) to a store whose layers hold `end` slots at most
  // (slot <= end): where the window must move first. {shift, keep}: device rows [shift, shift +
  // keep) move to [0, keep) in every layer and base rises by shift (shift 0: no move). Refused:
  // n beyond chunk, a slot below base (the window must be refilled first: truncate does).
  struct Move {
    std::uint32_t shift = 0;
    std::uint32_t keep = 0;
  };
  Expected<Move> before_write(std::uint32_t slot, std::uint32_t n, std::uint32_t end) const;
  void moved(const Move& m) noexcept { base_ += m.shift; }

  // The slots attention reads from system RAM for a query at n_past (every committed slot below
  // base), in pieces of at most `chunk`; the device reads [base, n_past + n_query). Refused: a
  // batch that is not in the window (n_past < base).
  Expected<std::vector<SlotRange>> host_pieces(std::uint32_t n_past) const;

  // After the store keeps only slots [0, n): the slots to copy from system RAM into device rows
  // [0, size) when n fell below base (an empty range when the window still holds its end), base
  // set to keep the window as full as it can be.
  SlotRange after_truncate(std::uint32_t n) { return n >= base_ ? SlotRange{} : rebase(n); }
  // The window set to end at slot n (system RAM holds the truth: after a compaction below base),
  // as full as it can be; the slots to copy into device rows [0, size).
  SlotRange rebase(std::uint32_t n);

 private:
  std::uint32_t capacity_, window_, chunk_;
  std::uint32_t base_ = 0;
};

// The blocks of `block` slots in [first, end) whose scores are the `top` highest (ties: the
// earlier block), in ascending slot order; each a SlotRange (the last may be short).
std::vector<SlotRange> best_blocks(std::span<const float> scores, std::uint32_t first, std::uint32_t end,
                                   std::uint32_t block, std::uint32_t top);

// An upper bound of q . k over the keys of a block (Quest): per channel, the larger of q times
// the block's smallest and largest key value, summed. lo and hi: the block's per-channel min and
// max, dim floats each.
float block_bound(const float* q, const float* lo, const float* hi, std::uint32_t dim) noexcept;

// Attention over disjoint pieces of the visible slots, merged: each piece's output row o_i (its
// own softmax) and log-sum-exp l_i (of the scaled scores; -inf: it saw nothing) combine to the
// attention over their union, o = sum_i exp(l_i - L) o_i with L = log sum_i exp(l_i). `out` and
// `lse` hold the first piece and take the second (rows of `dim` floats, `rows` of them).
void merge_attention(float* out, float* lse, const float* out2, const float* lse2, std::uint32_t rows,
                     std::uint32_t dim) noexcept;

}  // namespace graft::kv
