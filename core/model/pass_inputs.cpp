#include "model/pass_inputs.hpp"

#include <fmt/format.h>

#include <cstring>

namespace graft {

namespace {
constexpr std::uint64_t kAlign = 16;
std::uint64_t aligned(std::uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }
}  // namespace

std::uint64_t PassInputs::bytes_for(std::uint32_t max_rows, std::uint32_t max_tree) {
  // Three arrays of a row each, and masks of trees of up to max_tree rows filling the batch (the
  // sum of n_i^2 is at most max_rows * max_tree), each array padded to the alignment.
  return aligned(3 * std::uint64_t(max_rows) * sizeof(std::int32_t) + std::uint64_t(max_rows) * max_tree +
                 (std::uint64_t(max_rows) + 3) * kAlign);
}

Expected<std::unique_ptr<PassInputs>> PassInputs::create(Backend& backend, std::uint64_t bytes) {
  std::unique_ptr<PassInputs> in(new PassInputs());
  in->backend_ = &backend;
  in->capacity_ = aligned(bytes);
  auto staging = backend.allocate(in->capacity_, MemoryKind::pinned_host);
  if (!staging) return std::move(staging).status();
  auto device = backend.allocate(in->capacity_, MemoryKind::device);
  if (!device) return std::move(device).status();
  in->staging_ = std::move(*staging);
  in->device_ = std::move(*device);
  return in;
}

Expected<std::uint64_t> PassInputs::take(std::uint64_t bytes) {
  const std::uint64_t at = used_;
  if (at + bytes > capacity_)
    return Status(Errc::out_of_range, fmt::format("forward: the pass's index arrays need more than the {} bytes its "
                                                  "workspace holds for them (a token tree too large for the batch size?)",
                                                  capacity_));
  used_ = aligned(at + bytes);
  return at;
}

Expected<TensorView> PassInputs::add(std::span<const std::int32_t> values) {
  const std::uint64_t bytes = values.size() * sizeof(std::int32_t);
  auto at = take(bytes);
  if (!at) return std::move(at).status();
  if (bytes) std::memcpy(static_cast<char*>(staging_->data()) + *at, values.data(), bytes);
  return i32_view(reinterpret_cast<std::int32_t*>(static_cast<char*>(device_->data()) + *at),
                  static_cast<std::int64_t>(values.size()), MemoryKind::device);
}

Expected<TensorView> PassInputs::add_mask(const std::uint8_t* mask, std::uint32_t n) {
  const std::uint64_t bytes = std::uint64_t(n) * n;
  auto at = take(bytes);
  if (!at) return std::move(at).status();
  if (bytes) std::memcpy(static_cast<char*>(staging_->data()) + *at, mask, bytes);
  return i8_view(reinterpret_cast<std::uint8_t*>(static_cast<char*>(device_->data()) + *at), n, n, MemoryKind::device);
}

Status PassInputs::begin() {
  used_ = 0;
  if (!uploaded_) return Status::success();
  auto event = std::move(uploaded_);
  return event->ready() ? Status::success() : event->synchronize();
}

Status PassInputs::upload_captured() {
  uploaded_.reset();
  if (used_ == 0) return Status::success();
  return backend_->copy_async(device_->data(), MemoryKind::device, staging_->data(), MemoryKind::pinned_host, used_);
}

Status PassInputs::upload() {
  GRAFT_TRY(upload_captured());
  if (used_ == 0) return Status::success();
  // The event after the copy: begin() waits on it before the staging buffer is written again.
  auto event = backend_->record_event();
  if (!event) return std::move(event).status();
  uploaded_ = std::move(*event);
  return Status::success();
}

}  // namespace graft
