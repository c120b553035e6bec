#include "offload_window.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>

namespace graft::kv {

Expected<OffloadWindow::Move> OffloadWindow::before_write(std::uint32_t slot, std::uint32_t n, std::uint32_t end) const {
  if (n > chunk_)
    return Status(Errc::invalid_argument, "kvstore sysram: a write of " + std::to_string(n) +
                                              " tokens is more than chunk = " + std::to_string(chunk_) +
                                              " (a pass adds at most chunk tokens: raise chunk to the batch size)");
  if (slot < base_)
    return Status(Errc::invalid_argument, "kvstore sysram: write at slot " + std::to_string(slot) +
                                              " below the device window, which starts at " + std::to_string(base_));
  Move m;
  const std::uint32_t last = std::max(end, slot + n);  // slots the window must then hold: [base', last)
  if (last - base_ <= device_rows()) return m;
  // The smallest whole-chunk move that makes room, never past the slot being written.
  const std::uint32_t need = last - base_ - device_rows();
  m.shift = std::min((need + chunk_ - 1) / chunk_ * chunk_, slot - base_);
  m.keep = end > base_ + m.shift ? end - base_ - m.shift : 0;
  return m;
}

Expected<std::vector<SlotRange>> OffloadWindow::host_pieces(std::uint32_t n_past) const {
  if (n_past < base_)
    return Status(Errc::invalid_argument, "kvstore sysram: attention for a batch at slot " + std::to_string(n_past) +
                                              " below the device window, which starts at " + std::to_string(base_));
  std::vector<SlotRange> out;
  for (std::uint32_t b = 0; b < base_; b += chunk_) out.push_back({b, std::min(base_, b + chunk_)});
  return out;
}

SlotRange OffloadWindow::rebase(std::uint32_t n) {
  // The window ends at n: it starts a window's worth before, on a chunk boundary.
  base_ = n > window_ ? (n - window_) / chunk_ * chunk_ : 0;
  return {base_, n};
}

std::vector<SlotRange> best_blocks(std::span<const float> scores, std::uint32_t first, std::uint32_t end,
                                   std::uint32_t block, std::uint32_t top) {
  std::vector<std::uint32_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0u);
  const std::size_t k = std::min<std::size_t>(top, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                    [&](std::uint32_t a, std::uint32_t b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  order.resize(k);
  std::sort(order.begin(), order.end());
  std::vector<SlotRange> out;
  for (std::uint32_t i : order) out.push_back({first + i * block, std::min(end, first + (i + 1) * block)});
  return out;
}

float block_bound(const float* q, const float* lo, const float* hi, std::uint32_t dim) noexcept {
  float s = 0.0f;
  for (std::uint32_t d = 0; d < dim; ++d) s += std::max(q[d] * lo[d], q[d] * hi[d]);
  return s;
}

void merge_attention(float* out, float* lse, const float* out2, const float* lse2, std::uint32_t rows,
                     std::uint32_t dim) noexcept {
  for (std::uint32_t r = 0; r < rows; ++r) {
    const float a = lse[r], b = lse2[r];
    if (b == -std::numeric_limits<float>::infinity()) continue;  // the second piece saw nothing
    float* o = out + std::size_t(r) * dim;
    const float* o2 = out2 + std::size_t(r) * dim;
    if (a == -std::numeric_limits<float>::infinity()) {
      std::copy_n(o2, dim, o);
      lse[r] = b;
      continue;
    }
    const float m = std::max(a, b);
    const float wa = std::exp(a - m), wb = std::exp(b - m), inv = 1.0f / (wa + wb);
    for (std::uint32_t d = 0; d < dim; ++d) o[d] = (o[d] * wa + o2[d] * wb) * inv;
    lse[r] = m + std::log(wa + wb);
  }
}

}  // namespace graft::kv
