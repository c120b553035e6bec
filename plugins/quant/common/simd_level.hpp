// Which x86 kernels a format runs: picked once when the format is created, from the "simd" config
// key, else $GRAFT_CPU_SIMD, else the best the CPU supports. Every level computes bit-identical
// results (see docs/formats.md), so forcing one only changes speed; tests use it to cover each.
#pragma once

#include <string>
#include <string_view>

#include "graft/config.hpp"
#include "graft/status.hpp"

namespace graft::quant {

enum class SimdLevel { scalar = 0, avx2 = 1, avx512 = 2 };
inline constexpr int kSimdLevels = 3;

inline constexpr const char* kSimdEnvVar = "GRAFT_CPU_SIMD";

const char* simd_level_name(SimdLevel level) noexcept;
// avx2: AVX2 + FMA + F16C. avx512: that plus AVX-512 F/BW/VL/VNNI (OS-enabled state checked).
bool cpu_supports(SimdLevel level) noexcept;
SimdLevel best_simd_level() noexcept;
// "auto", "scalar", "avx2" or "avx512"; a level the CPU lacks is an error, never a silent downgrade.
Expected<SimdLevel> parse_simd_level(std::string_view text);
// Config key "simd" first, then the environment variable, then auto.
Expected<SimdLevel> resolve_simd_level(const Config& config);

}  // namespace graft::quant
