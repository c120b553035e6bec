// The index arrays of one forward pass (token ids, RoPE positions, token-tree parents and ancestor
// masks) in backend memory. The host writes them packed into a pinned staging buffer and sends them
// with one copy_async, so the kernels never read a host pointer (a GPU cannot) and a pass waits
// for nothing until its end (docs/architecture.md, "Devices").
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "graft/backend.hpp"
#include "graft/status.hpp"

namespace graft {

class PassInputs {
 public:
  // Room for `bytes` of arrays per pass (each array starts 16-byte aligned).
  static Expected<std::unique_ptr<PassInputs>> create(Backend& backend, std::uint64_t bytes);
  // What create() needs for passes of up to max_rows rows, in sequences of up to max_tree rows
  // each where they are token trees: ids, positions and parents, and the trees' masks.
  static std::uint64_t bytes_for(std::uint32_t max_rows, std::uint32_t max_tree);

  std::uint64_t capacity() const { return capacity_; }
  // Starts a pass: the arrays added before are forgotten. Waits until the last upload has left the
  // staging buffer (a drafter may enqueue several block calls before it synchronises).
  Status begin();
  // Stages an array; the view it returns is where it will be in backend memory after upload().
  // Errc::out_of_range when the pass's arrays do not fit.
  Expected<TensorView> add(std::span<const std::int32_t> values);
  Expected<TensorView> add_mask(const std::uint8_t* mask, std::uint32_t n);  // i8 [n, n]
  // Enqueues the copy of everything staged since begin().
  Status upload();
  // upload() inside a graph capture, where no event may be recorded: the caller synchronizes
  // before the next begin() (Model::forward does, after launching the graph).
  Status upload_captured();

 private:
  PassInputs() = default;
  Expected<std::uint64_t> take(std::uint64_t bytes);

  Backend* backend_ = nullptr;
  std::unique_ptr<Buffer> staging_;  // pinned host
  std::unique_ptr<Buffer> device_;   // backend (device) memory
  std::unique_ptr<Event> uploaded_;  // after the last upload's copy
  std::uint64_t capacity_ = 0, used_ = 0;
};

}  // namespace graft
