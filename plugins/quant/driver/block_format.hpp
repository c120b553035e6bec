// The WeightFormat every plugin of this folder instantiates from its FormatSpec, and the factory
// its descriptor points at. Config key "simd" forces a kernel level (see simd_level.hpp).
#pragma once

#include <cstddef>

#include "driver/format_spec.hpp"
#include "graft/plugin.hpp"

namespace graft::quant {

inline constexpr ConfigKeySpec kFormatConfigKeys[] = {
    {"simd", ConfigType::string,
     "CPU kernel level: auto, scalar, avx2, avx512 or amx (default: $GRAFT_CPU_SIMD, else auto)"},
};
inline constexpr std::uint32_t kFormatConfigKeyCount = 1;

PluginObject* create_block_format(const FormatSpec& spec, const HostServices& host, const Config& config,
                                  Status& error) noexcept;

// The factory of a plugin whose format is exactly Spec.
template <const FormatSpec& Spec>
PluginObject* block_format_factory(const HostServices& host, const Config& config, Status& error) noexcept {
  return create_block_format(Spec, host, config, error);
}

}  // namespace graft::quant

// The descriptor and export every format plugin of this folder ends with (at global scope; name as
// in the file name libgraft_quant_<name>.so). factory is evaluated in the plugin's anonymous
// namespace, e.g. &block_format_factory<kSpec>.
#define GRAFT_QUANT_FORMAT_PLUGIN(name, description, factory)                                              \
  namespace graft::quant {                                                                                 \
  namespace {                                                                                              \
  const PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(PluginDescriptor), PluginKind::weight_format, \
                                     name,              GRAFT_SDK_VERSION_STRING, description,               \
                                     kFormatConfigKeys, kFormatConfigKeyCount,    factory};                  \
  }                                                                                                        \
  }                                                                                                        \
  GRAFT_PLUGIN(graft::quant::kDescriptor)
