// Decode attention of the device KV store at bench-250m's shape (16 layers, 16 query heads over 8
// KV heads, head_dim 64) for each SIMD level, side by side in one run: the levels alternate
// within every repetition, so a noisy, shared machine slows them alike. Medians of wall time and
// of process CPU time per thread per step (all layers), and each variant's ratio to the first. "scalar" is the portable
// kernel, unchanged from before the SIMD path existed, so scalar / avx512 is the old / new ratio.
// --layouts head,token compares the store's head-major cache with a token-major one (every level
// with each layout, alternating too).
//
//   attn_bench [--ctx 256,1024] [--nq 1] [--threads 2] [--type f16|q8_0/q4_0] [--reps 300]
//              [--levels scalar,avx2,avx512] [--layouts head] [--layers 16] [--kv-heads 8] [--heads 16] [--dim 64]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include "attention.hpp"
#include "bench_options.hpp"
#include "cache_rows.hpp"
#include "cpu_backend.hpp"
#include "graft/graft.hpp"

using namespace graft;

namespace {

using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "attn_bench [--ctx 256,1024] [--nq 1] [--threads 2] [--type f16|f32|q8_0|q4_0|tq3|K/V] [--reps 300] "
    "[--levels scalar,avx2,avx512] [--layouts head,token] [--layers 16] [--kv-heads 8] [--heads 16] [--dim 64]";

struct Options {
  std::vector<long> ctx{256, 1024};
  std::vector<long> nq{1};
  long threads = 2, reps = 300, layers = 16, kv_heads = 8, heads = 16, dim = 64;
  std::string type = "f16";
  kv::CacheType k_type = kv::CacheType::f16, v_type = kv::CacheType::f16;
  std::vector<std::string> levels{"scalar", "avx2", "avx512"};
  std::vector<std::string> layouts{"head"};
};

bool parse(int argc, char** argv, Options& o) {
  namespace po = boost::program_options;
  using bench::list_into;
  po::options_description d("attn_bench options");
  d.add_options()
      ("ctx", list_into(o.ctx), "context lengths, e.g. 256,1024")
      ("nq", list_into(o.nq), "queries per step, e.g. 1,4")
      ("threads", po::value(&o.threads), "threads")
      ("reps", po::value(&o.reps), "repetitions")
      ("type", po::value(&o.type), "cache type: f16, f32, q8_0, q4_0 or tq3, or K/V types (q8_0/tq3)")
      ("levels", list_into(o.levels), "SIMD levels, e.g. scalar,avx2,avx512")
      ("layouts", list_into(o.layouts), "cache layouts: head (the store's) and/or token")
      ("layers", po::value(&o.layers), "layers")
      ("kv-heads", po::value(&o.kv_heads), "KV heads")
      ("heads", po::value(&o.heads), "query heads")
      ("dim", po::value(&o.dim), "head size");
  if (!bench::parse_options(argc, argv, kUsage, d)) return false;
  for (const auto& l : o.layouts)
    if (l != "head" && l != "token") {
      std::fprintf(stderr, "--layouts takes head and/or token\nusage: %s\n", kUsage);
      return false;
    }
  const auto slash = o.type.find('/');
  const std::string kt = o.type.substr(0, slash), vt = slash == std::string::npos ? kt : o.type.substr(slash + 1);
  const auto k = kv::cache_type_from_name(kt), v = kv::cache_type_from_name(vt);
  if (!k || !v) {
    std::fprintf(stderr, "--type takes f16, f32, q8_0, q4_0 or tq3, or K/V types such as q8_0/tq3\nusage: %s\n", kUsage);
    return false;
  }
  o.k_type = *k;
  o.v_type = *v;
  if ((kv::cache_type_elems(*k) > 1 || kv::cache_type_elems(*v) > 1) &&
      std::any_of(o.layouts.begin(), o.layouts.end(), [](const std::string& l) { return l != "head"; })) {
    std::fprintf(stderr, "quantized caches are head-major only: --layouts head\nusage: %s\n", kUsage);
    return false;
  }
  return true;
}

// Rows of d elements (contiguous, any layout) as the cache stores them in `type`.
std::vector<std::uint8_t> encode(const std::vector<float>& x, kv::CacheType type, std::uint32_t d) {
  const std::size_t rows = x.size() / d, row_bytes = kv::cache_row_bytes(type, d);
  std::vector<std::uint8_t> out(rows * row_bytes);
  for (std::size_t r = 0; r < rows; ++r) {
    const float* src = x.data() + r * d;
    void* dst = out.data() + r * row_bytes;
    kv::encode_row(type, src, d, dst);
  }
  return out;
}

// CPU seconds of the whole process: unlike wall time it does not count the time the machine's
// other jobs held the cores, the steadier figure on a shared machine (divide by the threads).
double process_cpu_us() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e6 + static_cast<double>(ts.tv_nsec) * 1e-3;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  if (!parse(argc, argv, o)) return 2;
  std::vector<kv::AttnSimd> levels;
  for (const auto& name : o.levels) {
    auto level = kv::parse_attn_simd(name);
    if (!level) {
      std::fprintf(stderr, "error: %s\n", level.status().message().c_str());
      return 1;
    }
    levels.push_back(*level);
  }
  const auto backend = bench::load_cpu_backend(std::filesystem::path(GRAFT_PLUGIN_DIR), o.threads);
  if (!backend) return 1;

  const auto d = static_cast<std::uint32_t>(o.dim);
  std::printf("attn_bench: %ld layers, %ld heads over %ld KV heads, head_dim %u, %s cache, %ld threads, %ld reps\n",
              o.layers, o.heads, o.kv_heads, d, o.type.c_str(), o.threads, o.reps);
  std::printf("%6s %4s %8s %6s %10s %10s %10s %12s %10s %s\n", "ctx", "nq", "level", "layout", "wall us", "us/layer", "vs first",
              "cpu us/thr", "vs first", "bits");
  std::mt19937 rng(1);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (long ctx : o.ctx)
    for (long nq : o.nq) {
      const std::size_t slots = static_cast<std::size_t>(ctx) + nq;
      const std::size_t elems = slots * o.kv_heads * d;
      // Each layer has its own K/V, as in a model, so a step reads every layer's cache; per layout
      // a copy in that order (token-major: [slot][head][dim]; head-major: [head][slot][dim]).
      const std::size_t heads = static_cast<std::size_t>(o.kv_heads);
      std::vector<std::vector<std::vector<std::uint8_t>>> kc(o.layouts.size()), vc(o.layouts.size());
      std::vector<std::vector<kv::LayerCache>> caches(o.layouts.size(), std::vector<kv::LayerCache>(o.layers));
      for (long l = 0; l < o.layers; ++l) {
        std::vector<float> kt(elems), vt(elems);
        for (auto& x : kt) x = u(rng);
        for (auto& x : vt) x = u(rng);
        for (std::size_t li = 0; li < o.layouts.size(); ++li) {
          const bool head = o.layouts[li] == "head";
          std::vector<float> k(elems), v(elems);
          for (std::size_t s = 0; s < slots; ++s)
            for (std::size_t h = 0; h < heads; ++h) {
              const std::size_t from = (s * heads + h) * d, to = head ? (h * slots + s) * d : from;
              std::copy_n(kt.data() + from, d, k.data() + to);
              std::copy_n(vt.data() + from, d, v.data() + to);
            }
          const auto& kb = kc[li].emplace_back(encode(k, o.k_type, d));
          const auto& vb = vc[li].emplace_back(encode(v, o.v_type, d));
          kv::LayerCache& c = caches[li][static_cast<std::size_t>(l)];
          c.k = kb.data();
          c.v = vb.data();
          c.k_type = o.k_type;
          c.v_type = o.v_type;
          c.n_kv_heads = static_cast<std::uint32_t>(o.kv_heads);
          c.head_dim_k = c.head_dim_v = d;
          c.capacity = head ? static_cast<std::uint32_t>(slots) : 0;
        }
      }
      std::vector<float> q(static_cast<std::size_t>(d) * o.heads * nq);
      for (auto& x : q) x = u(rng) * 4.0f;
      AttentionBatch b;
      b.n_query = static_cast<std::uint32_t>(nq);
      b.n_past = static_cast<std::uint32_t>(ctx);
      b.scale = 1.0f / std::sqrt(static_cast<float>(d));
      const TensorView qv = f32_view(q.data(), d, o.heads, nq);
      const std::size_t variants = levels.size() * o.layouts.size();  // level-major
      std::vector<std::vector<float>> outs(variants, std::vector<float>(q.size() * o.layers));
      std::vector<std::vector<double>> times(variants), cpu(variants);
      for (long r = 0; r < o.reps + 5; ++r)  // 5 warm-up rounds
        for (std::size_t li = 0; li < variants; ++li) {
          const auto t0 = Clock::now();
          const double c0 = process_cpu_us();
          for (long l = 0; l < o.layers; ++l) {
            const TensorView ov = f32_view(outs[li].data() + q.size() * l, d, o.heads, nq);
            const Status st = kv::attend(*backend, caches[li % o.layouts.size()][static_cast<std::size_t>(l)], qv, b, ov,
                                         levels[li / o.layouts.size()]);
            if (!st) {
              std::fprintf(stderr, "error: %s\n", st.message().c_str());
              return 1;
            }
          }
          if (r < 5) continue;
          times[li].push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
          cpu[li].push_back((process_cpu_us() - c0) / static_cast<double>(o.threads));
        }
      const double base = median(times[0]), base_cpu = median(cpu[0]);
      for (std::size_t li = 0; li < variants; ++li) {
        const double m = median(times[li]), c = median(cpu[li]);
        const bool same = std::memcmp(outs[li].data(), outs[0].data(), outs[0].size() * sizeof(float)) == 0;
        std::printf("%6ld %4ld %8s %6s %10.1f %10.2f %9.2fx %12.1f %9.2fx %s\n", ctx, nq,
                    graft::simd_level_name(levels[li / o.layouts.size()]), o.layouts[li % o.layouts.size()].c_str(), m,
                    m / static_cast<double>(o.layers), base / m, c, base_cpu / c, same ? "same" : "DIFFERENT");
      }
    }
  return 0;
}
