// The machine's memory read bandwidth, measured the way decode reads weights: every thread
// streams its own contiguous slice of a buffer much larger than the caches, with the widest loads
// the CPU has (a plain 64-bit or SSE2 loop is core-bound on some machines: docs/benchmarks.md), once plain and once prefetching into L2 4 KiB ahead as the decode kernels do,
// keeping the faster. Decode speed is reported as a fraction of this number measured in the same
// run.
#pragma once

#include <cstddef>

namespace graft {

struct BandwidthResult {
  double bytes_per_second = 0;  // best of the passes of every loop
  std::size_t buffer_bytes = 0;
  unsigned threads = 0;
  int passes = 0;
  const char* loads = "";  // the loop of the best pass: "avx512", "avx512+prefetch", "avx2" or "scalar"
};

BandwidthResult measure_read_bandwidth(unsigned threads, std::size_t buffer_bytes = std::size_t(1) << 30,
                                       int passes = 5);

}  // namespace graft
