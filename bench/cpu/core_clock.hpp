// The clock the core actually runs at, from a chain of dependent imul (3 cycles each on the x86
// cores we run on): bench tools turn seconds into cycles with it.
#pragma once

#include <algorithm>
#include <chrono>

namespace graft::bench {

#if defined(__x86_64__)
// Best of `reps` runs of 2 * iters dependent imul.
inline double core_clock_hz(long reps = 5, long iters = 20'000'000) {
  double best = 1e30;
  for (long r = 0; r < reps; ++r) {
    long x = 3, n = iters;
    const auto t0 = std::chrono::steady_clock::now();
    asm volatile("1: imul %0, %0\n imul %0, %0\n dec %1\n jnz 1b" : "+r"(x), "+r"(n));
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 6.0 * static_cast<double>(iters) / best;
}
#endif

}  // namespace graft::bench
