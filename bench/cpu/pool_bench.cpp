// The CPU backend's parallel_for round trip: how long a call takes whose ranges do almost nothing
// (each writes its own cache line), i.e. the hand-over to the pool's threads and back that every
// op of a decode step pays. Median over rounds of the mean per call, per range count.
//
//   pool_bench [--threads 2] [--n 2,8,64,256] [--calls 20000] [--rounds 9] [--plugin-dir DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include "bench_options.hpp"
#include "cpu_backend.hpp"
#include "graft/graft.hpp"

using namespace graft;

namespace {

constexpr const char* kUsage = "pool_bench [--threads 2] [--n 2,8,64,256] [--calls 20000] [--rounds 9] [--plugin-dir DIR]";

struct Options {
  long threads = 2, calls = 20000, rounds = 9;
  std::vector<long> n{2, 8, 64, 256};
  std::string plugin_dir = GRAFT_PLUGIN_DIR;
};

bool parse(int argc, char** argv, Options& o) {
  namespace po = boost::program_options;
  po::options_description d("pool_bench options");
  d.add_options()
      ("threads", po::value(&o.threads), "backend threads")
      ("n", bench::list_into(o.n), "indices per call, e.g. 2,64")
      ("calls", po::value(&o.calls), "calls per round")
      ("rounds", po::value(&o.rounds), "rounds (median)")
      ("plugin-dir", po::value(&o.plugin_dir), "folder of libgraft_backend_cpu.so");
  return bench::parse_options(argc, argv, kUsage, d);
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  const auto backend = bench::load_cpu_backend(o.plugin_dir, o.threads);
  if (!backend) return 1;
  struct alignas(64) Slot {
    std::size_t v = 0;
  };
  std::printf("pool_bench: %ld threads, %s\n%8s %14s\n", o.threads, o.plugin_dir.c_str(), "n", "us per call");
  for (long n : o.n) {
    std::vector<Slot> slots(static_cast<std::size_t>(n));
    std::vector<double> per_call;
    for (long r = 0; r < o.rounds; ++r) {
      const auto t0 = std::chrono::steady_clock::now();
      for (long c = 0; c < o.calls; ++c)
        backend->parallel_for(static_cast<std::size_t>(n), [&](std::size_t b, std::size_t e) {
          for (std::size_t i = b; i < e; ++i) slots[i].v += i;
        });
      per_call.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() /
                         static_cast<double>(o.calls));
    }
    std::sort(per_call.begin(), per_call.end());
    std::printf("%8ld %14.3f\n", n, per_call[per_call.size() / 2]);
  }
  return 0;
}
