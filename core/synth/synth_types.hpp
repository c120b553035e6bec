// Which ggml types a synthetic model's tensors get. f32 is written by the host itself; every
// other type (f16 and bf16 included) comes from a weight-format plugin's reference quantizer, so
// the host holds no format logic beyond GGUF block geometry.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "graft/status.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/weight_formats.hpp"
#include "synth/synth_config.hpp"

namespace graft::synth {

struct SynthTypes {
  WeightFormats formats;  // builtin table when only f32 is used (no plugin loaded)
  DefaultHostServices host;
  TypeId matrix = type_id::f32;
  TypeId embedding = type_id::f32;

  TypeId type_of(TensorRole role) const {
    return role == TensorRole::norm ? type_id::f32 : role == TensorRole::embedding ? embedding : matrix;
  }
  // The plugin that quantizes `type`; nullptr for f32.
  const WeightFormat* format_of(TypeId type) const { return type == type_id::f32 ? nullptr : host.weight_format(type); }
  bool quantized() const;  // some tensor has a block-quantized type (block of more than 1 element)
};

// Loads the weight-format plugins (only when a type other than f32 is asked for) from the default
// search path with `plugin_dirs` first, and resolves cfg.type / cfg.embedding_type() by name.
// A type no plugin provides is one line (Errc::not_found) naming the plugin file expected,
// libgraft_quant_<type>.so, and the folders searched.
Expected<std::unique_ptr<SynthTypes>> resolve_types(const SynthConfig& cfg,
                                                    const std::vector<std::filesystem::path>& plugin_dirs);

// Every tensor's rows must be whole blocks of its type (Errc::invalid_argument, naming the flag).
Status check_geometry(const SynthConfig& cfg, const SynthTypes& types);

}  // namespace graft::synth
