// Argument checks and work splitting shared by every format's CPU matmul and get_rows: prepares the
// activations once, then hands each backend thread a contiguous range of output rows.
#pragma once

#include <cstdint>

#include <vector>

#include "format_spec.hpp"
#include "q8_activations.hpp"
#include "graft/backend.hpp"

namespace graft::quant {

// Activation buffers reused across calls (page faults on fresh buffers cost as much as a small
// matmul).
struct MatmulScratch {
  Q8Activations q;
  Q8KActivations k;
  std::vector<float> rounded;
};

Status cpu_matmul(const FormatSpec& spec, SimdLevel level, MatmulScratch& scratch, Backend& backend,
                  const TensorView& w, const TensorView& x, const TensorView& y);

Status cpu_get_rows(const FormatSpec& spec, Backend& backend, const TensorView& table, const std::int32_t* ids,
                    std::size_t n, const TensorView& y);

// Bytes of one row of `row_len` elements; callers have checked divisibility.
inline std::uint64_t row_bytes(const TypeTraits& t, std::int64_t row_len) {
  return static_cast<std::uint64_t>(row_len) / t.block_elems * t.block_bytes;
}

}  // namespace graft::quant
