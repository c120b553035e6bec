// Which ggml types a synthetic model's tensors get: the shared quantize::TypePolicy (--type,
// --embd-type, --output-type, --tensor-type, --fallback-type), except that the output projection
// follows --type unless --output-type says otherwise (no q6_k default: a synthetic model made
// with --type T is all T, which benchmarks and cross-checks rely on). f32 is written by the host;
// every other type (f16 and bf16 included) comes from a weight-format plugin's reference quantizer.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graft/status.hpp"
#include "quantize/type_catalog.hpp"
#include "quantize/type_policy.hpp"
#include "synth/synth_config.hpp"

namespace graft::synth {

struct SynthTypes {
  std::unique_ptr<quantize::TypeCatalog> catalog;  // f32 only when no plugin type is named
  std::optional<quantize::TypePolicy> policy;

  // The type of one tensor of plan_tensors(cfg); errors as check_geometry.
  Expected<TypeId> type_of(const SynthConfig& cfg, const TensorPlan& t) const;
  // The plugin that quantizes `type`; nullptr for f32.
  const WeightFormat* format_of(TypeId type) const { return catalog->format(type); }
  // Some tensor gets a block-quantized type (block of more than 1 element).
  bool quantized(const SynthConfig& cfg) const;
};

// The policy options cfg's flags give.
quantize::TypeOptions type_options(const SynthConfig& cfg);

// Loads the weight-format plugins (only when a type other than f32 is named) from `plugin_dirs`,
// then the default search path, and resolves every named type. Errors as TypeCatalog::resolve and
// TypePolicy::create: an unknown type or a bad --tensor-type is Errc::invalid_argument; a ggml
// type no plugin provides is Errc::not_found naming libgraft_quant_<type>.so and the folders.
Expected<std::unique_ptr<SynthTypes>> resolve_types(const SynthConfig& cfg,
                                                    const std::vector<std::filesystem::path>& plugin_dirs);

// Every tensor's rows must be whole blocks of its type, or --fallback-type's (Errc::invalid_argument,
// naming the tensor, its row length, the type and its block size).
Status check_geometry(const SynthConfig& cfg, const SynthTypes& types);

}  // namespace graft::synth
