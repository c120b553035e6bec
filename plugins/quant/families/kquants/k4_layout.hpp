// Where the Q4_K and Q5_K kernels (Bits = 4 or 5 code bits) find the fields of a block, by code
// width, and the scale packing both blocks share.
#pragma once

#include <cstddef>

#include "families/kquants/k4_scales.hpp"
#include "formats/q4_k/block_q4_k.hpp"
#include "formats/q5_k/block_q5_k.hpp"

namespace graft::quant {

template <int Bits>
struct K4Layout {
  static_assert(Bits == 4 || Bits == 5);
  static constexpr std::size_t kBlockBytes = Bits == 4 ? sizeof(block_q4_k) : sizeof(block_q5_k);
  static constexpr std::size_t kQsOffset = Bits == 4 ? offsetof(block_q4_k, qs) : offsetof(block_q5_k, qs);
  static constexpr std::size_t kQhOffset = offsetof(block_q5_k, qh);  // Bits == 5 only
};

}  // namespace graft::quant
