#include "quantize/row_chunks.hpp"

#include <algorithm>
#include <thread>
#include <vector>

namespace graft::quantize {

Status convert_in_chunks(std::uint64_t rows, std::uint64_t row_len, std::uint64_t out_row_bytes, unsigned threads,
                         const ConvertRowsFn& convert, const EmitFn& emit) {
  threads = std::max(1u, threads);
  if (rows == 0) return {};
  const std::uint64_t rows_per_thread = std::max<std::uint64_t>(1, kElementsPerThread / std::max<std::uint64_t>(1, row_len));
  const std::uint64_t chunk_rows = std::min(rows, rows_per_thread * threads);
  std::vector<std::uint8_t> buf(static_cast<std::size_t>(chunk_rows * out_row_bytes));
  std::vector<Status> status(threads);
  for (std::uint64_t r = 0; r < rows; r += chunk_rows) {
    const std::uint64_t n_rows = std::min(chunk_rows, rows - r);
    const std::uint64_t per = (n_rows + threads - 1) / threads;
    auto work = [&](unsigned k) {
      const std::uint64_t lo = std::min(n_rows, k * per), hi = std::min(n_rows, lo + per);
      status[k] = lo == hi ? Status{} : convert(k, r + lo, hi - lo, buf.data() + lo * out_row_bytes);
    };
    if (threads == 1 || n_rows < 2) {
      work(0);
    } else {
      std::vector<std::jthread> pool;
      for (unsigned k = 1; k < threads; ++k) pool.emplace_back(work, k);
      work(0);
    }  // the pool joins here
    for (const auto& s : status)
      if (!s.ok()) return s;
    GRAFT_TRY(emit({buf.data(), static_cast<std::size_t>(n_rows * out_row_bytes)}));
  }
  return {};
}

}  // namespace graft::quantize
