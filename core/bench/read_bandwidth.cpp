#include "bench/read_bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

namespace graft {

namespace {
// Sums 64-bit words with several independent accumulators so the loop is load-bound, not
// add-latency-bound; the compiler vectorizes it.
std::uint64_t sum_words(const std::uint64_t* p, std::size_t n) {
  std::uint64_t a = 0, b = 0, c = 0, d = 0;
  std::size_t i = 0;
  for (; i + 4 <= n; i += 4) {
    a += p[i];
    b += p[i + 1];
    c += p[i + 2];
    d += p[i + 3];
  }
  for (; i < n; ++i) a += p[i];
  return a + b + c + d;
}
}  // namespace

BandwidthResult measure_read_bandwidth(unsigned threads, std::size_t buffer_bytes, int passes) {
  threads = std::max(1u, threads);
  const std::size_t words = buffer_bytes / sizeof(std::uint64_t);
  std::unique_ptr<std::uint64_t[]> buf(new std::uint64_t[words]);
  for (std::size_t i = 0; i < words; ++i) buf[i] = i;  // fault every page in before timing
  BandwidthResult r;
  r.buffer_bytes = words * sizeof(std::uint64_t);
  r.threads = threads;
  r.passes = passes;
  std::vector<std::uint64_t> sink(threads);
  for (int pass = 0; pass < passes; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    const std::size_t per = words / threads;
    for (unsigned t = 0; t < threads; ++t) {
      const std::size_t begin = t * per, n = t + 1 == threads ? words - begin : per;
      pool.emplace_back([&, t, begin, n] { sink[t] += sum_words(buf.get() + begin, n); });
    }
    for (auto& th : pool) th.join();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    r.bytes_per_second = std::max(r.bytes_per_second, static_cast<double>(r.buffer_bytes) / s);
  }
  volatile std::uint64_t keep = 0;
  for (auto v : sink) keep = keep + v;
  return r;
}

}  // namespace graft
