// q1_lut_bench: the Q1_0 decode kernel (q1_0_packed_gemm_avx512, compiled in from the plugin's
// sources) called directly on one packed matrix of m rows, again and again: GB/s and cycles per
// step of 16 rows x 32 weights, with none of the plugin call's work around it (activation rows,
// the thread pool). Small m keeps the matrix in L1 or L2, large m streams it from memory; the
// lookup tables are built on the first call only, as within one model matmul.
//
//   q1_lut_bench [--k 1024] [--m 256,2048,262144] [--reps 5]
//
// Each (k, m) line: the best and the median of --reps runs, each of as many passes over the matrix
// as make ~640 M weights; a median far above the best means the core was shared while it ran
// (bench/cpu/port_bench).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <vector>

#include "activations/q8_activations.hpp"
#include "bench_options.hpp"
#include "cpu/core_clock.hpp"
#include "families/bonsai/q1_0_packed.hpp"

using namespace graft::quant;

int main(int argc, char** argv) {
  std::vector<long> ks{1024}, ms{256, 2048, 262144};
  long reps = 5;
  namespace po = boost::program_options;
  po::options_description d("q1_lut_bench options");
  d.add_options()("k", graft::bench::list_into(ks), "row lengths (multiples of 128)")(
      "m", graft::bench::list_into(ms), "rows (multiples of 16)")("reps", po::value(&reps), "runs per line");
  if (!graft::bench::parse_options(argc, argv, "q1_lut_bench [--k 1024] [--m 256,2048,262144] [--reps 5]", d) ||
      reps < 1)
    return 2;
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512vbmi") || !__builtin_cpu_supports("avx512vnni")) {
    std::fprintf(stderr, "q1_lut_bench: needs AVX-512 VNNI and VBMI\n");
    return 1;
  }
  const double hz = graft::bench::core_clock_hz();
  std::printf("clock: %.2f GHz (dependent imul chain)\n", hz / 1e9);
  std::printf("%6s %8s %10s %10s %12s %12s\n", "k", "m", "GB/s best", "GB/s med", "cyc/step best", "cyc/step med");
  std::mt19937 rng(1);
  for (long k : ks)
    for (long m : ms) {
      if (k % 128 || m % 16) {
        std::fprintf(stderr, "q1_lut_bench: k must be a multiple of 128 and m of 16\n");
        return 2;
      }
      const long nb = k / 128, row_bytes = nb * 18;
      // Random signs with scale 1.0 (0x3C00): the kernel's speed does not depend on the values.
      AlignedVector<std::uint8_t> w(static_cast<std::size_t>(m * row_bytes));
      for (auto& b : w) b = static_cast<std::uint8_t>(rng());
      for (long g = 0; g < m / 16; ++g)
        for (long b = 0; b < nb; ++b)
          for (int i = 0; i < 16; ++i) {
            std::uint8_t* s = w.data() + g * 16 * row_bytes + b * kQ1GroupBlockBytes + 2 * i;
            s[0] = 0x00, s[1] = 0x3C;
          }
      Q8Activations xq;
      xq.n = 1, xq.nb = k / 32, xq.generation = next_activation_generation();
      xq.qs.resize(static_cast<std::size_t>(k));
      for (auto& q : xq.qs) q = static_cast<std::int8_t>(static_cast<int>(rng() % 255) - 127);
      xq.d.assign(static_cast<std::size_t>(xq.nb), 0.01f);
      xq.lane_offsets.assign(static_cast<std::size_t>(xq.nb * 8), 0);
      AlignedVector<float> y(static_cast<std::size_t>(m));
      GemmArgs a;
      a.w = w.data(), a.w_stride = static_cast<std::size_t>(row_bytes), a.k = k, a.xq = &xq;
      a.y = y.data(), a.y_stride = static_cast<std::size_t>(m);
      const long passes = std::max(1L, 640'000'000L / (m * k));
      q1_0_packed_gemm_avx512(a, 0, m, 0, 1);                        // tables, first touch
      std::vector<double> secs;
      for (long r = 0; r < reps; ++r) {
        const auto t0 = std::chrono::steady_clock::now();
        for (long i = 0; i < passes; ++i) q1_0_packed_gemm_avx512(a, 0, m, 0, 1);
        secs.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      }
      std::sort(secs.begin(), secs.end());
      const double bytes = static_cast<double>(m * row_bytes) * passes;
      const double steps = static_cast<double>(m / 16) * (k / 32) * passes;
      const double best = secs.front(), med = secs[secs.size() / 2];
      std::printf("%6ld %8ld %10.2f %10.2f %12.2f %12.2f\n", k, m, bytes / best / 1e9, bytes / med / 1e9,
                  best * hz / steps, med * hz / steps);
    }
  return 0;
#else
  std::fprintf(stderr, "q1_lut_bench: x86-64 only\n");
  return 1;
#endif
}
