// Converting a tensor's rows a chunk at a time on several threads, for `graft quantize` and `graft
// synth`: each chunk is split into contiguous parts, one per thread, converted into one buffer, then
// handed on in row order. Each row is converted on its own, so the bytes never depend on the
// thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "graft/status.hpp"

namespace graft::quantize {

// Elements converted per thread per step: a few MiB of f32 scratch each, enough to hide the
// thread start-up.
inline constexpr std::uint64_t kElementsPerThread = 1u << 20;

// Writes rows [row, row + n_rows) to dst (n_rows * out_row_bytes bytes). `worker` (0..threads-1)
// is the same thread's index for every part it gets, for per-thread scratch.
using ConvertRowsFn =
    std::function<Status(unsigned worker, std::uint64_t row, std::uint64_t n_rows, std::uint8_t* dst)>;
// Receives the converted chunks in row order.
using EmitFn = std::function<Status(std::span<const std::uint8_t> bytes)>;

// Converts rows [0, rows) of row_len elements with `convert` on max(1, threads) threads and passes
// the chunks to `emit`. The first failing part (in row order) stops the work and is returned.
Status convert_in_chunks(std::uint64_t rows, std::uint64_t row_len, std::uint64_t out_row_bytes, unsigned threads,
                         const ConvertRowsFn& convert, const EmitFn& emit);

}  // namespace graft::quantize
