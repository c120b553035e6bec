#include "cpu_features.hpp"

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif
#if defined(__linux__)
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace graft {

namespace {

#if defined(__x86_64__) || defined(__i386__)
unsigned long long xgetbv0() {
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

CpuFeatures detect() {
  CpuFeatures f;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  const bool fma = c & (1u << 12), osxsave = c & (1u << 27), f16c = c & (1u << 29);
  if (!osxsave) return f;
  const unsigned long long xcr0 = xgetbv0();
  const bool ymm_state = (xcr0 & 0x6) == 0x6;    // SSE + AVX state saved by the OS
  const bool zmm_state = (xcr0 & 0xE6) == 0xE6;  // plus opmask and both ZMM halves
  f.fma = ymm_state && fma;
  f.f16c = ymm_state && f16c;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return f;
  f.avx2 = ymm_state && (b & (1u << 5));
  f.avx512f = zmm_state && (b & (1u << 16));
  f.avx512dq = zmm_state && (b & (1u << 17));
  f.avx512bw = zmm_state && (b & (1u << 30));
  f.avx512vl = zmm_state && (b & (1u << 31));
  f.avx512vbmi = zmm_state && (c & (1u << 1));
  f.gfni = c & (1u << 8);
  f.avx512vnni = zmm_state && (c & (1u << 11));
  f.avx512bitalg = zmm_state && (c & (1u << 12));
  f.amx_tile = d & (1u << 24);
  f.amx_int8 = d & (1u << 25);
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avxvnni = ymm_state && (a & (1u << 4));
  return f;
}

bool request_amx_tiles() {
  const CpuFeatures& f = cpu_features();
  if (!f.amx_tile || !f.amx_int8) return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
  // Linux hands out the 8 KiB tile state only on request (once per process, all threads).
  constexpr long kReqXcompPerm = 0x1023, kXtileData = 18;
  const bool granted = syscall(SYS_arch_prctl, kReqXcompPerm, kXtileData) == 0;
  return granted && (xgetbv0() & 0x60000) == 0x60000;  // XTILECFG + XTILEDATA enabled
#else
  return false;
#endif
}
#else
CpuFeatures detect() { return {}; }
bool request_amx_tiles() { return false; }
#endif

}  // namespace

const CpuFeatures& cpu_features() noexcept {
  static const CpuFeatures f = detect();
  return f;
}

bool amx_tiles_granted() noexcept {
  static const bool granted = request_amx_tiles();
  return granted;
}

}  // namespace graft
