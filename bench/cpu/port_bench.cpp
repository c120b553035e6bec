// port_bench: what this core's vector ports deliver right now, in cycles per instruction, for the
// instructions the quantized kernels are made of, alone and mixed. The clock comes from a chain of
// dependent imul (3 cycles each), so the figures are cycles of the clock the core actually ran.
// Each figure is the best and the median of --reps runs: on a shared host a busy neighbour on the
// same core shows as a median far above the best.
//
//   port_bench [--reps 7]
//
// x86-64 with AVX-512 F/BW/VNNI/VBMI and GFNI only.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "bench_options.hpp"
#include "cpu/core_clock.hpp"

namespace {

constexpr long kIters = 20'000'000;

double seconds_of(void (*fn)(long)) {
  const auto t0 = std::chrono::steady_clock::now();
  fn(kIters);
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

#if defined(__x86_64__)
#define PB_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni,avx512vbmi,gfni"), noinline))


#define PB_CLOBBER \
  "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11", "xmm12", "xmm13", "xmm14", "xmm15"
#define PB_LOOP(name, body)                                                                                     \
  PB_TARGET void name(long n) {                                                                                 \
    asm volatile("vpxord %%zmm0,%%zmm0,%%zmm0\n vpxord %%zmm1,%%zmm1,%%zmm1\n vpxord %%zmm2,%%zmm2,%%zmm2\n"  \
                 "vpxord %%zmm3,%%zmm3,%%zmm3\n vpxord %%zmm4,%%zmm4,%%zmm4\n vpxord %%zmm5,%%zmm5,%%zmm5\n"  \
                 "vpxord %%zmm6,%%zmm6,%%zmm6\n vpxord %%zmm7,%%zmm7,%%zmm7\n vpxord %%zmm8,%%zmm8,%%zmm8\n"  \
                 "vpxord %%zmm9,%%zmm9,%%zmm9\n 1:\n" body "dec %0\n jnz 1b"                                    \
                 : "+r"(n)::PB_CLOBBER);                                                                        \
  }
// Sixteen destinations (zmm0..15), sources zmm30, zmm31: enough chains that even the accumulating
// instructions (vpdpbusd: ~6 cycles of latency) are measured at their throughput.
#define PB_SIXTEEN(op)                                                                                        \
  op " %%zmm30,%%zmm31,%%zmm0\n" op " %%zmm30,%%zmm31,%%zmm1\n" op " %%zmm30,%%zmm31,%%zmm2\n"              \
  op " %%zmm30,%%zmm31,%%zmm3\n" op " %%zmm30,%%zmm31,%%zmm4\n" op " %%zmm30,%%zmm31,%%zmm5\n"              \
  op " %%zmm30,%%zmm31,%%zmm6\n" op " %%zmm30,%%zmm31,%%zmm7\n" op " %%zmm30,%%zmm31,%%zmm8\n"              \
  op " %%zmm30,%%zmm31,%%zmm9\n" op " %%zmm30,%%zmm31,%%zmm10\n" op " %%zmm30,%%zmm31,%%zmm11\n"            \
  op " %%zmm30,%%zmm31,%%zmm12\n" op " %%zmm30,%%zmm31,%%zmm13\n" op " %%zmm30,%%zmm31,%%zmm14\n"           \
  op " %%zmm30,%%zmm31,%%zmm15\n"
// Eight of a and eight of b, alternating, each into its own destination.
#define PB_MIX(a, b)                                                                                          \
  a " %%zmm30,%%zmm31,%%zmm0\n" b " %%zmm30,%%zmm31,%%zmm1\n" a " %%zmm30,%%zmm31,%%zmm2\n"                  \
  b " %%zmm30,%%zmm31,%%zmm3\n" a " %%zmm30,%%zmm31,%%zmm4\n" b " %%zmm30,%%zmm31,%%zmm5\n"                  \
  a " %%zmm30,%%zmm31,%%zmm6\n" b " %%zmm30,%%zmm31,%%zmm7\n" a " %%zmm30,%%zmm31,%%zmm8\n"                  \
  b " %%zmm30,%%zmm31,%%zmm9\n" a " %%zmm30,%%zmm31,%%zmm10\n" b " %%zmm30,%%zmm31,%%zmm11\n"                \
  a " %%zmm30,%%zmm31,%%zmm12\n" b " %%zmm30,%%zmm31,%%zmm13\n" a " %%zmm30,%%zmm31,%%zmm14\n"               \
  b " %%zmm30,%%zmm31,%%zmm15\n"

PB_LOOP(vpdpbusd16, PB_SIXTEEN("vpdpbusd"))
PB_LOOP(vfmadd16, PB_SIXTEEN("vfmadd231ps"))
PB_LOOP(vpandd16, PB_SIXTEEN("vpandd"))
PB_LOOP(vpermb16, PB_SIXTEEN("vpermb"))
PB_LOOP(vpshufb16, PB_SIXTEEN("vpshufb"))
PB_LOOP(vpackssdw16, PB_SIXTEEN("vpackssdw"))
PB_LOOP(vpsrlvw16, PB_SIXTEEN("vpsrlvw"))
PB_LOOP(vgf2p8affine16, PB_SIXTEEN("vgf2p8affineqb $0,"))
PB_LOOP(vpermb_vpdpbusd, PB_MIX("vpermb", "vpdpbusd"))
PB_LOOP(vpermb_vpandd, PB_MIX("vpermb", "vpandd"))
// Q1_0's lookup-table decode step (q1_0_lut_avx512.cpp) on registers: 2 ternlog, a shift, 4
// vpermb, 2 byte adds, 2 vpdpbusd, cvt, mul, fma: 14 operations, 4 of them shuffle-port only.
#define PB_LUT_STEP(acc)                                                                                       \
  "vpsrlw $4,%%zmm8,%%zmm1\n vpternlogd $0xea,%%zmm9,%%zmm10,%%zmm0\n vpternlogd $0xea,%%zmm9,%%zmm10,%%zmm1\n" \
  "vpermb %%zmm11,%%zmm0,%%zmm2\n vpermb %%zmm11,%%zmm1,%%zmm3\n vpermb %%zmm9,%%zmm0,%%zmm4\n"                \
  "vpermb %%zmm9,%%zmm1,%%zmm5\n vpaddb %%zmm3,%%zmm2,%%zmm2\n vpaddb %%zmm5,%%zmm4,%%zmm4\n"                  \
  "vpxord %%zmm6,%%zmm6,%%zmm6\n vpdpbusd %%zmm10,%%zmm2,%%zmm6\n vpdpbusd %%zmm11,%%zmm4,%%zmm6\n"            \
  "vcvtdq2ps %%zmm6,%%zmm6\n vmulps %%zmm9,%%zmm10,%%zmm7\n vfmadd231ps %%zmm7,%%zmm6,%%zmm" acc "\n"
PB_LOOP(q1_lut_step, PB_LUT_STEP("12") PB_LUT_STEP("13") PB_LUT_STEP("14") PB_LUT_STEP("15"))
#endif

struct Case {
  const char* name;
  void (*fn)(long);
  double per_iter;  // instructions (or kernel steps) per loop iteration
  const char* unit;
};

}  // namespace

int main(int argc, char** argv) {
  long reps = 7;
  namespace po = boost::program_options;
  po::options_description d("port_bench options");
  d.add_options()("reps", po::value(&reps), "runs of each loop (best and median shown)");
  if (!graft::bench::parse_options(argc, argv, "port_bench [--reps 7]", d) || reps < 1) return 2;
#if defined(__x86_64__)
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vnni") || !__builtin_cpu_supports("avx512vbmi") || !__builtin_cpu_supports("gfni")) {
    std::fprintf(stderr, "port_bench: needs AVX-512 F/BW/VNNI/VBMI and GFNI\n");
    return 1;
  }
  const double hz = graft::bench::core_clock_hz(reps);
  std::printf("clock: %.2f GHz (dependent imul chain, best of %ld)\n", hz / 1e9, reps);
  const Case cases[] = {
      {"vpdpbusd zmm", vpdpbusd16, 16, "cycles/instr"},
      {"vfmadd231ps zmm", vfmadd16, 16, "cycles/instr"},
      {"vpandd zmm", vpandd16, 16, "cycles/instr"},
      {"vpermb zmm", vpermb16, 16, "cycles/instr"},
      {"vpshufb zmm", vpshufb16, 16, "cycles/instr"},
      {"vpackssdw zmm", vpackssdw16, 16, "cycles/instr"},
      {"vpsrlvw zmm", vpsrlvw16, 16, "cycles/instr"},
      {"vgf2p8affineqb zmm", vgf2p8affine16, 16, "cycles/instr"},
      {"8 vpermb + 8 vpdpbusd", vpermb_vpdpbusd, 1, "cycles/16"},
      {"8 vpermb + 8 vpandd", vpermb_vpandd, 1, "cycles/16"},
      {"Q1_0 LUT step (16x32)", q1_lut_step, 4, "cycles/step"},
  };
  std::printf("%-24s %10s %10s  %s\n", "loop", "best", "median", "unit");
  for (const Case& c : cases) {
    std::vector<double> cyc;
    for (long r = 0; r < reps; ++r) cyc.push_back(seconds_of(c.fn) * hz / (kIters * c.per_iter));
    std::sort(cyc.begin(), cyc.end());
    std::printf("%-24s %10.2f %10.2f  %s\n", c.name, cyc.front(), cyc[cyc.size() / 2], c.unit);
  }
  return 0;
#else
  std::fprintf(stderr, "port_bench: x86-64 only\n");
  return 1;
#endif
}
