// The SIMD levels the CPU plugins (backend, KV store, weight formats) choose between, their names
// and the environment variable that forces one. Which level a plugin can run, and what it says
// when asked for one it cannot, stays with the plugin: their kernels need different features.
#pragma once

#include <optional>
#include <string_view>

namespace graft {

// amx: the avx512 kernels plus AMX tile kernels where a weight format has them (the backend and
// the KV store have none and run avx512 for it).
enum class SimdLevel { scalar = 0, avx2 = 1, avx512 = 2, amx = 3 };
inline constexpr int kSimdLevels = 4;

// Forces one level in every CPU plugin of the process (tests use it to cover each).
inline constexpr const char* kSimdEnvVar = "GRAFT_CPU_SIMD";

// "scalar", "avx2", "avx512" or "amx".
const char* simd_level_name(SimdLevel level) noexcept;
// The level of that name; none for any other text ("auto" included).
std::optional<SimdLevel> simd_level_named(std::string_view name) noexcept;

}  // namespace graft
