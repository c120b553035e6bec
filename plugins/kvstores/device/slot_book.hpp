// The slot bookkeeping of the `device` KV store, wherever its K/V live (the CPU store here, the
// CUDA kernel library's store on a GPU, the emulated device's in the tests): which slots each
// layer has filled, the store's size, and the rules of write, attend, truncate and compact with
// their exact errors. A store checks with it before moving any bytes and tells it what it did,
// so every backend's store refuses the same calls with the same words, and a GPU store keeps its
// size on the host when it enqueues (the host plans the next pass before the last one ran).
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "graft/kv_store.hpp"
#include "graft/status.hpp"

namespace graft::kv {

class SlotBook {
 public:
  explicit SlotBook(const KvGeometry& g) : g_(g), filled_(g.n_layers, 0) {}

  // Slots present in every layer: a pass writing layers 0..L-1 at [size, size + n) raises it when
  // its last layer is written; an aborted pass leaves it unchanged.
  std::uint32_t size() const noexcept { return size_; }
  std::uint32_t filled(std::uint32_t layer) const noexcept { return filled_[layer]; }

  // The layer exists, the write leaves no gap and fits the capacity.
  Status check_write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n) const;
  void wrote(std::uint32_t layer, std::uint32_t slot, std::uint32_t n);
  // The layer exists and holds slots [0, n_past + n_query).
  Status check_attend(std::uint32_t layer, std::uint32_t n_past, std::uint32_t n_query) const;
  // n <= size.
  Status check_truncate(std::uint32_t n) const;
  // src strictly ascending filled slots, src[0] >= dst (empty: dst <= size). After the moves the
  // store holds dst + src.size() slots: set_all().
  Status check_compact(std::uint32_t dst, std::span<const std::uint32_t> src) const;
  void set_all(std::uint32_t n);

 private:
  KvGeometry g_;
  std::vector<std::uint32_t> filled_;
  std::uint32_t size_ = 0;
};

}  // namespace graft::kv
