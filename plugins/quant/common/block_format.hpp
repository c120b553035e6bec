// The WeightFormat every plugin of this folder instantiates from its FormatSpec, and the factory
// its descriptor points at. Config key "simd" forces a kernel level (see simd_level.hpp).
#pragma once

#include <cstddef>

#include "format_spec.hpp"
#include "graft/plugin.hpp"

namespace graft::quant {

inline constexpr ConfigKeySpec kFormatConfigKeys[] = {
    {"simd", ConfigType::string,
     "CPU kernel level: auto, scalar, avx2, avx512 or amx (default: $GRAFT_CPU_SIMD, else auto)"},
};
inline constexpr std::uint32_t kFormatConfigKeyCount = 1;

PluginObject* create_block_format(const FormatSpec& spec, const HostServices& host, const Config& config,
                                  Status& error) noexcept;

}  // namespace graft::quant
