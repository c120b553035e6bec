// Which x86 kernels a format runs: picked once when the format is created, from the "simd" config
// key, else $GRAFT_CPU_SIMD, else the best the CPU supports. Every level computes bit-identical
// results (see docs/formats.md), so forcing one only changes speed; tests use it to cover each.
// The levels, their names and the variable are the CPU plugins' (plugins/common/cpu_simd.hpp).
#pragma once

#include <string_view>

#include "cpu_simd.hpp"
#include "graft/config.hpp"
#include "graft/status.hpp"

namespace graft::quant {

// avx2: AVX2 + FMA + F16C. avx512: that plus AVX-512 F/BW/VL/VNNI (OS-enabled state checked).
// amx: avx512 plus AVX512-DQ/BITALG and AMX-TILE/AMX-INT8, with the tile state granted to this
// process by the kernel (Linux arch_prctl(ARCH_REQ_XCOMP_PERM), requested on the first query).
// A format without AMX kernels runs its avx512 kernel at the amx level: the results are the same.
bool cpu_supports(SimdLevel level) noexcept;
SimdLevel best_simd_level() noexcept;
// "auto", "scalar", "avx2", "avx512" or "amx"; a level the CPU lacks is an error, never a silent downgrade.
Expected<SimdLevel> parse_simd_level(std::string_view text);
// Config key "simd" first, then the environment variable, then auto.
Expected<SimdLevel> resolve_simd_level(const Config& config);
// The level whose kernel a format runs at `level`: amx falls to avx512 where gemm has no AMX entry.
template <class Kernels>
SimdLevel kernel_level(const Kernels& gemm, SimdLevel level) noexcept {
  return level == SimdLevel::amx && !gemm[SimdLevel::amx] ? SimdLevel::avx512 : level;
}

// Of a routine's portable, AVX2 and AVX-512 forms, the one for `level` (amx: the AVX-512 one; the
// tile kernels are FormatSpec::gemm entries of their own).
template <class Fn>
Fn for_level(SimdLevel level, Fn portable, Fn avx2, Fn avx512) noexcept {
  switch (level) {
    case SimdLevel::scalar: return portable;
    case SimdLevel::avx2: return avx2;
    case SimdLevel::avx512:
    case SimdLevel::amx: return avx512;
  }
  return portable;
}

}  // namespace graft::quant
