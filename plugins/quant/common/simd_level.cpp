#include "simd_level.hpp"

#include <cstdlib>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace graft::quant {

namespace {

struct Features {
  bool avx2 = false;
  bool avx512 = false;
  bool amx = false;
};

#if defined(__x86_64__) || defined(__i386__)
unsigned long long xgetbv0() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

Features detect() {
  Features f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), f16c = c & (1u << 29);
  if (!osxsave) return f;
  const unsigned long long xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;     // SSE + AVX state saved by the OS
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;   // plus opmask and both ZMM halves
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  const bool avx2 = b & (1u << 5), avx512f = b & (1u << 16), avx512bw = b & (1u << 30),
             avx512vl = b & (1u << 31), vnni = c & (1u << 11);
  f.avx2 = ymm_state && avx2 && fma && f16c;
  f.avx512 = f.avx2 && zmm_state && avx512f && avx512bw && avx512vl && vnni;
#if defined(__linux__) && defined(SYS_arch_prctl)
  // The AMX kernels also use AVX512-DQ and -BITALG (every AMX CPU so far has both).
  const bool amx_tile = d & (1u << 24), amx_int8 = d & (1u << 25), dq = b & (1u << 17), bitalg = c & (1u << 12);
  if (f.avx512 && dq && bitalg && amx_tile && amx_int8) {
    // Linux hands out the 8 KiB tile state only on request (once per process, all threads).
    constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
    const bool granted = syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
    f.amx = granted && (xgetbv0() & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA enabled
  }
#endif  // other systems: no amx level (their way of granting the tile state is not implemented)
  return f;
}
#else
Features detect() { return {}; }
#endif

const Features& features() {
  static const Features f = detect();
  return f;
}

}  // namespace

const char* simd_level_name(SimdLevel level) noexcept {
  switch (level) {
    case SimdLevel::scalar: return "scalar";
    case SimdLevel::avx2: return "avx2";
    case SimdLevel::avx512: return "avx512";
    case SimdLevel::amx: return "amx";
  }
  return "?";
}

bool cpu_supports(SimdLevel level) noexcept {
  switch (level) {
    case SimdLevel::scalar: return true;
    case SimdLevel::avx2: return features().avx2;
    case SimdLevel::avx512: return features().avx512;
    case SimdLevel::amx: return features().amx;
  }
  return false;
}

SimdLevel best_simd_level() noexcept {
  if (cpu_supports(SimdLevel::amx)) return SimdLevel::amx;
  if (cpu_supports(SimdLevel::avx512)) return SimdLevel::avx512;
  if (cpu_supports(SimdLevel::avx2)) return SimdLevel::avx2;
  return SimdLevel::scalar;
}

Expected<SimdLevel> parse_simd_level(std::string_view text) {
  if (text == "auto") return best_simd_level();
  for (SimdLevel level : {SimdLevel::scalar, SimdLevel::avx2, SimdLevel::avx512, SimdLevel::amx}) {
    if (text != simd_level_name(level)) continue;
    if (!cpu_supports(level))
      return Status(Errc::unsupported, "simd level '" + std::string(text) + "' is not supported by this CPU (best: " +
                                           simd_level_name(best_simd_level()) + ")");
    return level;
  }
  return Status(Errc::invalid_argument,
                "unknown simd level '" + std::string(text) + "' (expected auto, scalar, avx2, avx512 or amx)");
}

Expected<SimdLevel> resolve_simd_level(const Config& config) {
  if (auto key = config.get_string("simd")) return parse_simd_level(*key);
  if (const char* env = std::getenv(kSimdEnvVar); env && *env) {
    auto level = parse_simd_level(env);
    if (!level) return Status(level.status().code(), std::string(kSimdEnvVar) + ": " + level.status().message());
    return level;
  }
  return best_simd_level();
}

}  // namespace graft::quant
