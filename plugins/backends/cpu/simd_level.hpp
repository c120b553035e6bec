// Which instruction set the CPU backend's kernels use. Chosen once per backend from the CPU's
// features, or forced with GRAFT_CPU_SIMD so tests can compare the paths on one machine.
#pragma once

#include <string>
#include <string_view>

#include "cpu_info.hpp"
#include "cpu_simd.hpp"
#include "graft/status.hpp"

namespace graft::cpu {

// The CPU plugins' levels (cpu_simd.hpp); the backend runs scalar, avx2 or avx512, never amx.
using SimdLevel = graft::SimdLevel;
using graft::simd_level_name;

// The best level this CPU supports: avx512 needs avx512f (+avx2, fma, f16c); avx2 needs avx2,
// fma and f16c.
SimdLevel best_simd_level(const CpuInfo& info) noexcept;

// requested: "" or "auto" (best level), "avx512" (or "amx", the same here), "avx2" or "scalar". A level the CPU lacks or an
// unknown name is an invalid_argument error that names the source (e.g. "GRAFT_CPU_SIMD").
Expected<SimdLevel> resolve_simd_level(std::string_view requested, const CpuInfo& info,
                                       std::string_view source);

}  // namespace graft::cpu
