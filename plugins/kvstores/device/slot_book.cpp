#include "slot_book.hpp"

#include <algorithm>
#include <string>

namespace graft::kv {

namespace {

Status fail(Errc code, const std::string& message) { return Status(code, "kvstore device: " + message); }

std::string no_layer(const char* what, std::uint32_t layer, std::uint32_t n_layers) {
  return std::string(what) + ": layer " + std::to_string(layer) + " does not exist (the store has " +
         std::to_string(n_layers) + " layers)";
}

}  // namespace

Status SlotBook::check_write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n) const {
  if (layer >= g_.n_layers) return fail(Errc::invalid_argument, no_layer("write", layer, g_.n_layers));
  if (slot > size_)
    return fail(Errc::invalid_argument,
                "write: slot " + std::to_string(slot) + " would leave a gap: " + std::to_string(size_) +
                    " slots are filled, so a write may start at slot " + std::to_string(size_) + " at most");
  const std::uint64_t end = static_cast<std::uint64_t>(slot) + n;
  if (end > g_.capacity)
    return fail(Errc::out_of_range, "context full: writing slots [" + std::to_string(slot) + ", " +
                                        std::to_string(end) + ") needs room for " + std::to_string(end) +
                                        " tokens but the KV cache holds " + std::to_string(g_.capacity) +
                                        "; raise [context] size in the profile (or pass --ctx)");
  return Status::success();
}

void SlotBook::wrote(std::uint32_t layer, std::uint32_t slot, std::uint32_t n) {
  if (n == 0) return;
  filled_[layer] = std::max(filled_[layer], slot + n);
  size_ = *std::min_element(filled_.begin(), filled_.end());
}

Status SlotBook::check_attend(std::uint32_t layer, std::uint32_t n_past, std::uint32_t n_query) const {
  if (layer >= g_.n_layers) return fail(Errc::invalid_argument, no_layer("attend", layer, g_.n_layers));
  const std::uint64_t need = static_cast<std::uint64_t>(n_past) + n_query;
  if (need > filled_[layer])
    return fail(Errc::out_of_range, "attend: the batch needs slots [0, " + std::to_string(need) + ") (n_past " +
                                        std::to_string(n_past) + " + n_query " + std::to_string(n_query) +
                                        ") but layer " + std::to_string(layer) + " has " +
                                        std::to_string(filled_[layer]) + " filled; write the batch's K/V first");
  return Status::success();
}

Status SlotBook::check_truncate(std::uint32_t n) const {
  if (n > size_)
    return fail(Errc::out_of_range, "truncate(" + std::to_string(n) + "): only " + std::to_string(size_) +
                                        " slots are filled; truncate can only shrink");
  return Status::success();
}

Status SlotBook::check_compact(std::uint32_t dst, std::span<const std::uint32_t> src) const {
  if (src.empty()) {
    if (dst > size_)
      return fail(Errc::out_of_range,
                  "compact: dst " + std::to_string(dst) + " is past the " + std::to_string(size_) + " filled slots");
    return Status::success();
  }
  if (src[0] < dst)
    return fail(Errc::invalid_argument, "compact: src[0] = " + std::to_string(src[0]) + " is below dst " +
                                            std::to_string(dst) + "; slots can only move down");
  for (std::size_t i = 1; i < src.size(); ++i)
    if (src[i] <= src[i - 1])
      return fail(Errc::invalid_argument, "compact: src must be strictly ascending, but src[" + std::to_string(i - 1) +
                                              "] = " + std::to_string(src[i - 1]) + " and src[" + std::to_string(i) +
                                              "] = " + std::to_string(src[i]));
  if (src.back() >= size_)
    return fail(Errc::out_of_range, "compact: src slot " + std::to_string(src.back()) + " is not filled (size " +
                                        std::to_string(size_) + ")");
  return Status::success();
}

void SlotBook::set_all(std::uint32_t n) {
  std::fill(filled_.begin(), filled_.end(), n);
  size_ = n;
}

}  // namespace graft::kv
