// The one x86 feature detector of the CPU plugins (backend, KV store, weight formats): cpuid and
// xgetbv, read once per plugin. A feature counts only where the OS also saves the registers it
// needs (YMM for the AVX ones, opmask and ZMM for AVX-512), which is what lets code run it.
#pragma once

namespace graft {

struct CpuFeatures {
  bool avx2 = false, fma = false, f16c = false;  // with YMM state
  bool avxvnni = false;                           // VEX-encoded vpdpbusd (AVX-VNNI), with YMM state
  bool avx512f = false, avx512bw = false, avx512vl = false, avx512dq = false, avx512vnni = false,
       avx512vbmi = false, avx512bitalg = false;  // with opmask and ZMM state
  bool gfni = false;
  // The CPU has AMX tiles and their int8 products; a process may use them only once the OS has
  // granted the tile state (amx_tiles_granted).
  bool amx_tile = false, amx_int8 = false;
};

// Detected on the first call; every call returns the same answer. All false off x86.
const CpuFeatures& cpu_features() noexcept;

// Whether this process may use the AMX tiles: the CPU has amx_tile and amx_int8, and Linux granted
// the 8 KiB tile state (arch_prctl(ARCH_REQ_XCOMP_PERM), asked on the first call, once per process
// for all threads) and enabled it in XCR0. False on other systems (their way of granting the tile
// state is not implemented).
bool amx_tiles_granted() noexcept;

}  // namespace graft
