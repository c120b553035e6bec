// Streams quantized weights through the CPU matvec kernels like a decode step through a model's
// layers, and measures, in the same run and with the same thread count, how fast plain code reads
// memory. The ratio of the two is the figure of merit on a shared, noisy machine.
//
//   quant_bench [--threads 1,2] [--formats q8_0,q4_0,q1_0,q2_0] [--k 1024,2048,4096] [--mib 512] [--reps 5]
//               [--prefill 64] [--simd auto] [--m 4096] [--plugin-dir DIR] [--quantize 0] [--prepare 1]
// --prepare 0 runs the kernels on the file's layout even where they have one of their own
// (FormatKernels::prepare, which the model always uses): --prepare 0,1 measures both side by side.
// With a small --m and --mib 0 (one matrix that stays in cache) it measures the kernels' compute
// speed instead of memory streaming. --quantize 1 instead times each format's quantizer (one
// thread, 4096 x 256 pseudo-random weights, best of --reps). --against DIR compares the format
// plugins of another build (B) with --plugin-dir's (A): passes alternate A, B, B, A, ... on the
// same matrices, and the figure is the median of the B/A speed ratios of adjacent passes, which a
// machine whose speed drifts by tens of percent between runs still measures to a few percent.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include <time.h>

#include "bench/read_bandwidth.hpp"
#include "bench_options.hpp"
#include "graft/graft.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_library.hpp"

using namespace graft;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "quant_bench [--threads 1,2] [--formats q8_0,q4_0] [--k 1024,2048,4096] [--mib 512] [--reps 5] "
    "[--prefill 64] [--simd auto] [--m 4096] [--plugin-dir DIR] [--quantize 0] [--prepare 1] [--against DIR]";

struct Options {
  std::vector<long> threads{1, 2};
  std::vector<std::string> formats{"q8_0", "q4_0"};
  std::vector<long> ks{1024, 2048, 4096};
  long mib = 512;       // weight bytes per pass, well beyond any cache
  long reps = 5;
  long prefill = 64;    // activation rows for the prefill figure (0: skip)
  long m = 4096;        // rows per matrix
  std::string simd = "auto";
  std::string plugin_dir = GRAFT_PLUGIN_DIR;
  std::string against;  // a second build's plugin folder: A/B mode
  bool quantize = false;
  std::vector<long> prepare{1};
};

bool parse(int argc, char** argv, Options& o) {
  namespace po = boost::program_options;
  using bench::list_into;
  long quantize = 0;
  po::options_description d("quant_bench options");
  d.add_options()
      ("threads", list_into(o.threads), "thread counts, e.g. 1,2")
      ("formats", list_into(o.formats), "weight formats, e.g. q8_0,q4_0")
      ("k", list_into(o.ks), "row lengths, e.g. 1024,2048,4096")
      ("mib", po::value(&o.mib), "weight MiB per pass")
      ("reps", po::value(&o.reps), "passes (best of)")
      ("prefill", po::value(&o.prefill), "activation rows for the prefill figure (0: skip)")
      ("simd", po::value(&o.simd), "kernel level")
      ("m", po::value(&o.m), "rows per matrix")
      ("plugin-dir", po::value(&o.plugin_dir), "plugin folder")
      ("quantize", po::value(&quantize), "1: time each format's quantizer instead")
      ("prepare", list_into(o.prepare), "1: the kernels' own weight layout where they have one, 0: the file's; 0,1: both")
      ("against", po::value(&o.against), "another build's plugin folder (B): alternate passes, B/A ratios");
  if (!bench::parse_options(argc, argv, kUsage, d)) return false;
  o.quantize = quantize != 0;
  return true;
}

std::shared_ptr<PluginLibrary> load(const std::string& dir, const std::string& file) {
  auto lib = PluginLibrary::load(std::filesystem::path(dir) / file);
  if (!lib) {
    std::fprintf(stderr, "error: %s\n", lib.status().message().c_str());
    std::exit(1);
  }
  return *lib;
}

double process_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Best of `reps` runs of fn: wall seconds, and CPU seconds per thread (what the run cost while it
// was actually scheduled; on a machine shared with other jobs this is the steadier figure).
struct Timing {
  double wall = 1e30, cpu = 1e30;
};

template <class F>
Timing best_of(long reps, unsigned threads, F&& fn) {
  Timing best;
  for (long r = 0; r < reps; ++r) {
    const auto t0 = Clock::now();
    const double c0 = process_cpu_seconds();
    fn();
    best.cpu = std::min(best.cpu, (process_cpu_seconds() - c0) / threads);
    best.wall = std::min(best.wall, std::chrono::duration<double>(Clock::now() - t0).count());
  }
  return best;
}


struct Matrices {
  std::vector<std::unique_ptr<Buffer>> buffers;
  TypeTraits traits{};
  std::int64_t k = 0, m = 0;
  std::size_t bytes_each = 0;
};

// Byte offsets of each block's fp16 scales (random bytes there could be denormals, which are slow).
std::vector<std::size_t> scale_offsets(const std::string& format) {
  if (format == "q2_k") return {80, 82};
  if (format == "q3_k") return {108};
  if (format == "tq1_0") return {52};
  if (format == "tq2_0") return {64};
  if (format == "q4_k" || format == "q5_k") return {0, 2};
  if (format == "q6_k") return {208};
  return {0};
}

// Random blocks with a modest fp16 scale (0x2000 = 2^-7): the kernels' speed does not depend on the
// values, and generating bytes is far faster than quantizing floats.
Matrices make_matrices(Backend& backend, const TypeTraits& t, std::int64_t k, std::int64_t m, std::size_t total_bytes,
                       const std::vector<std::size_t>& scales) {
  Matrices mx;
  mx.traits = t;
  mx.k = k;
  mx.m = m;
  mx.bytes_each = static_cast<std::size_t>(k / t.block_elems * t.block_bytes * mx.m);
  const std::size_t count = std::max<std::size_t>(1, total_bytes / mx.bytes_each);
  std::uint64_t state = 0x243F6A8885A308D3ull;
  for (std::size_t i = 0; i < count; ++i) {
    auto buf = backend.allocate(mx.bytes_each, MemoryKind::host);
    if (!buf) std::exit(1);
    auto* p = static_cast<std::uint8_t*>((*buf)->data());
    for (std::size_t j = 0; j < mx.bytes_each; j += 8) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      std::memcpy(p + j, &state, std::min<std::size_t>(8, mx.bytes_each - j));
    }
    for (std::size_t b = 0; b < mx.bytes_each; b += t.block_bytes)
      for (std::size_t o : scales) {
        p[b + o] = 0x00;
        p[b + o + 1] = 0x20;
      }
    mx.buffers.push_back(std::move(*buf));
  }
  return mx;
}

// Input and output columns in the backend's memory (cache-line aligned, as in a model).
struct Columns {
  std::unique_ptr<Buffer> xb, yb;
  float* x = nullptr;
  float* y = nullptr;
};
Columns make_columns(Backend& backend, std::int64_t k, std::int64_t m, std::int64_t n) {
  Columns c;
  auto xb = backend.allocate(static_cast<std::size_t>(k * n) * sizeof(float), MemoryKind::host);
  auto yb = backend.allocate(static_cast<std::size_t>(m * n) * sizeof(float), MemoryKind::host);
  if (!xb || !yb) std::exit(1);
  c.xb = std::move(*xb), c.yb = std::move(*yb);
  c.x = static_cast<float*>(c.xb->data()), c.y = static_cast<float*>(c.yb->data());
  for (std::int64_t i = 0; i < k * n; ++i) c.x[i] = static_cast<float>((i * 7919) % 1000) / 500.0f - 1.0f;
  return c;
}

TensorView view(const Matrices& mx, std::size_t i) {
  TensorView v;
  v.data = mx.buffers[i]->data();
  v.type = mx.traits.id;
  v.n_dims = 2;
  const std::size_t row = mx.bytes_each / static_cast<std::size_t>(mx.m);
  v.ne = {mx.k, mx.m, 1, 1};
  v.nb = {mx.traits.block_bytes, row, mx.bytes_each, mx.bytes_each};
  return v;
}

// One build's kernels of a format, and the matrices in their layout.
struct Side {
  std::shared_ptr<PluginLibrary> lib;
  std::shared_ptr<WeightFormat> fmt;
  FormatKernels* kern = nullptr;
  std::vector<std::unique_ptr<PreparedWeights>> prepared;
};

Side open_side(const std::string& dir, const std::string& name, const std::string& simd, DefaultHostServices& host) {
  Side s;
  s.lib = load(dir, "libgraft_quant_" + name + ".so");
  Config fcfg;
  fcfg.set("simd", simd);
  auto fmt = s.lib->create<WeightFormat>(host, fcfg);
  if (!fmt) {
    std::fprintf(stderr, "error: %s\n", fmt.status().message().c_str());
    std::exit(1);
  }
  s.fmt = *fmt;
  s.kern = s.fmt->kernels("cpu");
  return s;
}

// The matrices in the side's kernels' own layout where they have one (as the model loads them),
// or (prep == 0) nothing prepared: the file's layout.
// The new ones are made before the old ones are freed, so they land on other pages.
void prepare_side(Side& sd, Backend& b, const Matrices& mx, bool prep) {
  std::vector<std::unique_ptr<PreparedWeights>> fresh(mx.buffers.size());
  for (std::size_t i = 0; i < mx.buffers.size() && prep; ++i)
    if (const Status st = sd.kern->prepare(b, view(mx, i), fresh[i]); !st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      std::exit(1);
    }
  sd.prepared = std::move(fresh);
}

// One pass: every matrix times the first n columns of xy.
void run_pass(const Side& sd, Backend& b, const Matrices& mx, const Columns& xy, std::int64_t n) {
  for (std::size_t i = 0; i < mx.buffers.size(); ++i) {
    const Status st = sd.kern->matmul(b, view(mx, i), sd.prepared[i].get(), f32_view(xy.x, mx.k, n),
                                      f32_view(xy.y, mx.m, n));
    if (!st.ok()) {
      std::fprintf(stderr, "error: %s\n", st.message().c_str());
      std::exit(1);
    }
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n == 0 ? 0.0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// A and B alternate `reps` times; each one's best time, and the B/A speed ratio of each adjacent
// pair (A then B, or B then A: the order swaps every pair so a drift favours neither).
struct AbResult {
  double best_a = 1e30, best_b = 1e30, median_ratio = 0, low = 0, high = 0;
};
template <class FP, class FA, class FB>
AbResult alternate(long reps, FP&& before_pair, FA&& run_a, FB&& run_b) {
  auto time = [](auto& fn) {
    const auto t0 = Clock::now();
    fn();
    return std::chrono::duration<double>(Clock::now() - t0).count();
  };
  AbResult r;
  std::vector<double> ratios;
  for (long i = 0; i < reps; ++i) {
    before_pair();
    double ta, tb;
    if (i % 2 == 0) ta = time(run_a), tb = time(run_b);
    else tb = time(run_b), ta = time(run_a);
    r.best_a = std::min(r.best_a, ta), r.best_b = std::min(r.best_b, tb);
    ratios.push_back(ta / tb);  // B's speed over A's
  }
  r.median_ratio = median(ratios);
  std::sort(ratios.begin(), ratios.end());
  r.low = ratios[ratios.size() / 4], r.high = ratios[ratios.size() * 3 / 4];
  return r;
}

// Quantizer throughput: what converting a model costs per thread.
int quantize_speed(const Options& o, DefaultHostServices& host) {
  constexpr std::int64_t k = 4096, rows = 256;
  std::vector<float> w(static_cast<std::size_t>(k * rows));
  std::uint64_t state = 0x9E3779B97F4A7C15ull;
  for (auto& v : w) {  // sums of uniforms: roughly Gaussian, sigma ~0.03
    float sum = 0;
    for (int i = 0; i < 4; ++i) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      sum += static_cast<float>(state >> 40) / 16777216.0f - 0.5f;
    }
    v = sum * 0.05f;
  }
  std::printf("%-6s %16s\n", "format", "quantize Mw/s");
  for (const auto& name : o.formats) {
    auto lib = load(o.plugin_dir, "libgraft_quant_" + name + ".so");
    auto fmt = lib->create<WeightFormat>(host, Config{});
    if (!fmt) {
      std::fprintf(stderr, "error: %s\n", fmt.status().message().c_str());
      return 1;
    }
    const TypeTraits t = (*fmt)->types()[0];
    std::vector<std::uint8_t> q(static_cast<std::size_t>(k / t.block_elems * t.block_bytes * rows));
    const Timing best = best_of(o.reps, 1, [&] {
      if (!(*fmt)->quantize(t.id, w.data(), q.data(), rows, k, nullptr).ok()) std::exit(1);
    });
    std::printf("%-6s %16.2f\n", name.c_str(), static_cast<double>(k * rows) / best.wall / 1e6);
  }
  return 0;
}

// Reads a buffer larger than the L3 (300 MiB here), so that no pass starts with its matrices cached
// because they were written or read last.
void scrub_caches() {
  static std::vector<std::uint64_t> buf(std::size_t{640} << 17, 1);  // 640 MiB
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < buf.size(); i += 8) sum += buf[i];
  volatile std::uint64_t sink = sum;
  (void)sink;
}

// --against: the same matrices through A's and B's kernels, passes alternating. When the weights
// stream from memory (--mib > 0), both sides' prepared matrices are made anew, in fresh
// allocations, before every pair, and the caches scrubbed: with one allocation per side for the
// whole run, the same build against itself came out anywhere from 0.96 to 1.09 with quartiles
// within 0.02 of it (where each side's pages happened to land), a bias larger than the effects
// measured. Fresh pages every pair turn it into noise that the median takes out.
int compare(const Options& o, DefaultHostServices& host, PluginLibrary& cpu_lib) {
  std::printf("A: %s\nB: %s\nweights per pass: %ld MiB (matrices of k x %ld); %ld alternating pairs\n",
              o.plugin_dir.c_str(), o.against.c_str(), o.mib, o.m, o.reps);
  std::printf("%-6s %5s %3s %9s %9s %16s %11s %11s %16s  %s\n", "format", "k", "thr", "A GB/s", "B GB/s",
              "B/A matvec (IQR)", "A pf tok/s", "B pf tok/s", "B/A prefill", "layout");
  for (long threads : o.threads) {
    Config bcfg;
    bcfg.set("threads", static_cast<std::int64_t>(threads));
    auto backend = cpu_lib.create<Backend>(host, bcfg);
    if (!backend) return 1;
    Backend& b = **backend;
    for (const auto& name : o.formats) {
      Side sides[2] = {open_side(o.plugin_dir, name, o.simd, host), open_side(o.against, name, o.simd, host)};
      for (long k : o.ks)
        for (long prep : o.prepare) {
          const Matrices mx = make_matrices(b, sides[0].fmt->types()[0], k, o.m, static_cast<std::size_t>(o.mib) << 20,
                                            scale_offsets(name));
          const std::size_t count = mx.buffers.size();
          const Columns xy = make_columns(b, k, mx.m, std::max(1L, o.prefill));
          for (Side& sd : sides) prepare_side(sd, b, mx, prep != 0);
          auto pass = [&](const Side& sd, std::int64_t n) { run_pass(sd, b, mx, xy, n); };
          pass(sides[0], 1), pass(sides[1], 1);  // warm up
          long pairs = 0;
          auto before_pair = [&] {
            if (o.mib == 0) return;
            if (pairs++ % 2 == 0) prepare_side(sides[0], b, mx, prep != 0), prepare_side(sides[1], b, mx, prep != 0);
            else prepare_side(sides[1], b, mx, prep != 0), prepare_side(sides[0], b, mx, prep != 0);
            scrub_caches();
          };
          const AbResult dec = alternate(o.reps, before_pair, [&] { pass(sides[0], 1); }, [&] { pass(sides[1], 1); });
          AbResult pf;
          if (o.prefill > 0)
            pf = alternate(std::max(2L, o.reps / 2), before_pair, [&] { pass(sides[0], o.prefill); },
                           [&] { pass(sides[1], o.prefill); });
          const double bytes = static_cast<double>(mx.bytes_each * count), np = static_cast<double>(o.prefill);
          std::printf("%-6s %5ld %3ld %9.2f %9.2f %6.3f (%.2f-%.2f) %11.1f %11.1f %6.3f (%.2f-%.2f)  %s\n", name.c_str(), k,
                      threads, bytes / dec.best_a / 1e9, bytes / dec.best_b / 1e9, dec.median_ratio, dec.low, dec.high,
                      o.prefill > 0 ? np / pf.best_a : 0.0, o.prefill > 0 ? np / pf.best_b : 0.0, pf.median_ratio, pf.low,
                      pf.high, sides[0].prepared[0] ? sides[0].prepared[0]->layout() : "file");
          std::fflush(stdout);
        }
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  DefaultHostServices host;
  if (o.quantize) return quantize_speed(o, host);
  auto cpu_lib = load(o.plugin_dir, "libgraft_backend_cpu.so");
  if (!o.against.empty()) return compare(o, host, *cpu_lib);
  std::printf("weights per pass: %ld MiB (matrices of k x %ld); best of %ld passes\n", o.mib, o.m, o.reps);
  std::printf("%-6s %5s %3s %11s %10s %6s %12s %14s %8s %5s  %s\n", "format", "k", "thr", "matvec GB/s", "read GB/s",
              "ratio", "decode tok/s", "prefill tok/s", "pf/dec", "par", "layout");
  for (long threads : o.threads) {
    Config bcfg;
    bcfg.set("threads", static_cast<std::int64_t>(threads));
    auto backend = cpu_lib->create<Backend>(host, bcfg);
    if (!backend) return 1;
    Backend& b = **backend;
    for (const auto& name : o.formats) {
      Side side = open_side(o.plugin_dir, name, o.simd, host);
      for (long k : o.ks)
        for (long prep : o.prepare) {
        const Matrices mx = make_matrices(b, side.fmt->types()[0], k, o.m, static_cast<std::size_t>(o.mib) << 20,
                                          scale_offsets(name));
        const std::size_t count = mx.buffers.size();
        const Columns xy = make_columns(b, k, mx.m, std::max(1L, o.prefill));
        prepare_side(side, b, mx, prep != 0);
        auto pass = [&](std::int64_t n) { run_pass(side, b, mx, xy, n); };
        pass(1);  // warm up: page in, wake threads
        const unsigned nt = b.n_threads();
        const Timing dec = best_of(o.reps, nt, [&] { pass(1); });
        // Measured right after the matvecs so both see the same machine load.
        // (graft bench's probe: the widest loads the CPU has; a plain loop undercounts it.)
        const BandwidthResult read = measure_read_bandwidth(nt, std::size_t{1} << 30, 3);
        const double bytes = static_cast<double>(mx.bytes_each * count);
        Timing pf;
        if (o.prefill > 0) pf = best_of(std::max(1L, o.reps / 2), nt, [&] { pass(o.prefill); });
        const double np = static_cast<double>(o.prefill);
        // par: CPU time over wall time x threads in the matvec runs; below ~0.9 the machine did not
        // give every thread a core and the figures understate the kernels.
        const double gbs = bytes / dec.wall / 1e9, rd = read.bytes_per_second / 1e9;
        const double dec_tps = 1.0 / dec.wall, pf_tps = o.prefill > 0 ? np / pf.wall : 0.0;
        std::printf("%-6s %5ld %3ld %11.2f %10.2f %6.2f %12.1f %14.1f %8.2f %5.2f  %s\n", name.c_str(), k, threads, gbs, rd,
                    gbs / rd, dec_tps, pf_tps, o.prefill > 0 ? pf_tps / dec_tps : 0.0, dec.cpu / dec.wall,
                    side.prepared[0] ? side.prepared[0]->layout() : "file");
        std::fflush(stdout);
      }
    }
  }
  return 0;
}
