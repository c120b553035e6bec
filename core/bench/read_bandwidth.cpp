#include "bench/read_bandwidth.hpp"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <thread>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#endif

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

#if defined(__x86_64__) && defined(__GNUC__)
// The same sum with 256- and 512-bit loads (the tails in the portable loop).
__attribute__((target("avx2"))) std::uint64_t sum_words_avx2(const std::uint64_t* p, std::size_t n) {
  __m256i a = _mm256_setzero_si256(), b = a, c = a, d = a;
  std::size_t i = 0;
  for (; i + 16 <= n; i += 16) {
    a = _mm256_add_epi64(a, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)));
    b = _mm256_add_epi64(b, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 4)));
    c = _mm256_add_epi64(c, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 8)));
    d = _mm256_add_epi64(d, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i + 12)));
  }
  alignas(32) std::uint64_t lanes[4];
  _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), _mm256_add_epi64(_mm256_add_epi64(a, b), _mm256_add_epi64(c, d)));
  return lanes[0] + lanes[1] + lanes[2] + lanes[3] + sum_words(p + i, n - i);
}
// kPrefetch: each line is also prefetched into L2 4 KiB ahead, as the decode kernels do (their
// streams can then run faster than the plain loop: docs/benchmarks.md, "Prefetching probe"); the
// probe keeps the faster of the two.
template <bool kPrefetch>
__attribute__((target("avx512f"))) std::uint64_t sum_words_avx512(const std::uint64_t* p, std::size_t n) {
  __m512i a = _mm512_setzero_si512(), b = a, c = a, d = a;
  std::size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    if constexpr (kPrefetch)
      for (int l = 0; l < 4; ++l) _mm_prefetch(reinterpret_cast<const char*>(p + i) + 4096 + 64 * l, _MM_HINT_T1);
    a = _mm512_add_epi64(a, _mm512_loadu_si512(p + i));
    b = _mm512_add_epi64(b, _mm512_loadu_si512(p + i + 8));
    c = _mm512_add_epi64(c, _mm512_loadu_si512(p + i + 16));
    d = _mm512_add_epi64(d, _mm512_loadu_si512(p + i + 24));
  }
  alignas(64) std::uint64_t lanes[8];  // (not _mm512_reduce_add_epi64: GCC 12 warns inside it)
  _mm512_store_si512(lanes, _mm512_add_epi64(_mm512_add_epi64(a, b), _mm512_add_epi64(c, d)));
  return sum_words(lanes, 8) + sum_words(p + i, n - i);
}
#endif

using SumFn = std::uint64_t (*)(const std::uint64_t*, std::size_t);
struct SumLoop {
  const char* name;
  SumFn fn;
};
// The loops the probe runs, widest loads first; it reports the fastest.
std::vector<SumLoop> sum_loops() {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx512f"))
    return {{"avx512", &sum_words_avx512<false>}, {"avx512+prefetch", &sum_words_avx512<true>}};
  if (__builtin_cpu_supports("avx2")) return {{"avx2", &sum_words_avx2}};
#endif
  return {{"scalar", &sum_words}};
}
}  // namespace

BandwidthResult measure_read_bandwidth(unsigned threads, std::size_t buffer_bytes, int passes) {
  threads = std::max(1u, threads);
  const std::size_t words = buffer_bytes / sizeof(std::uint64_t);
  // Line-aligned, so no 512-bit load straddles two cache lines.
  struct Free {
    void operator()(std::uint64_t* p) const { ::operator delete[](p, std::align_val_t{64}); }
  };
  std::unique_ptr<std::uint64_t[], Free> buf(static_cast<std::uint64_t*>(
      ::operator new[](words * sizeof(std::uint64_t), std::align_val_t{64})));
  for (std::size_t i = 0; i < words; ++i) buf[i] = i;  // fault every page in before timing
  BandwidthResult r;
  r.buffer_bytes = words * sizeof(std::uint64_t);
  r.threads = threads;
  r.passes = passes;
  const std::vector<SumLoop> loops = sum_loops();
  std::vector<std::uint64_t> sink(threads);
  // Passes alternate between the loops, so a swing of the shared machine hits each alike.
  for (int pass = 0; pass < passes; ++pass)
    for (const SumLoop& loop : loops) {
      const auto t0 = std::chrono::steady_clock::now();
      std::vector<std::thread> pool;
      const std::size_t per = words / threads;
      for (unsigned t = 0; t < threads; ++t) {
        const std::size_t begin = t * per, n = t + 1 == threads ? words - begin : per;
        pool.emplace_back([&, t, begin, n] { sink[t] += loop.fn(buf.get() + begin, n); });
      }
      for (auto& th : pool) th.join();
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      if (const double bps = static_cast<double>(r.buffer_bytes) / s; bps > r.bytes_per_second)
        r.bytes_per_second = bps, r.loads = loop.name;
    }
  volatile std::uint64_t keep = 0;
  for (auto v : sink) keep = keep + v;
  return r;
}

}  // namespace graft
