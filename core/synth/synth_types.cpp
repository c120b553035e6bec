#include "synth/synth_types.hpp"

#include <algorithm>
#include <cctype>

namespace graft::synth {
namespace {

bool is_f32(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s.empty() || s == "f32";
}

}  // namespace

quantize::TypeOptions type_options(const SynthConfig& cfg) {
  quantize::TypeOptions o;
  o.type = cfg.type;
  o.embd_type = cfg.embd_type;
  o.output_type = cfg.output_type;
  o.fallback_type = cfg.fallback_type;
  o.tensor_types = cfg.tensor_types;
  o.q6_k_output_default = false;
  return o;
}

Expected<TypeId> SynthTypes::type_of(const SynthConfig& cfg, const TensorPlan& t) const {
  auto choice = policy->choose(t.name, t.ne, !cfg.tied);
  if (!choice) return std::move(choice).status();
  return choice->type;
}

bool SynthTypes::quantized(const SynthConfig& cfg) const {
  for (const auto& t : plan_tensors(cfg)) {
    auto type = type_of(cfg, t);
    if (type && catalog->block_elems(*type) > 1) return true;
  }
  return false;
}

Expected<std::unique_ptr<SynthTypes>> resolve_types(const SynthConfig& cfg,
                                                    const std::vector<std::filesystem::path>& plugin_dirs) {
  const quantize::TypeOptions options = type_options(cfg);
  bool all_f32 = is_f32(options.type) && is_f32(options.embd_type) && is_f32(options.output_type) &&
                 is_f32(options.fallback_type);
  for (const auto& o : options.tensor_types) all_f32 = all_f32 && is_f32(o.substr(o.rfind('=') + 1));

  auto out = std::make_unique<SynthTypes>();
  if (all_f32) {
    out->catalog = std::make_unique<quantize::TypeCatalog>();
  } else {
    auto catalog = quantize::TypeCatalog::load(plugin_dirs);
    if (!catalog) return std::move(catalog).status();
    out->catalog = std::move(*catalog);
  }
  auto policy = quantize::TypePolicy::create(options, *out->catalog);
  if (!policy) return std::move(policy).status();
  out->policy = std::move(*policy);
  return out;
}

Status check_geometry(const SynthConfig& cfg, const SynthTypes& types) {
  for (const auto& t : plan_tensors(cfg)) {
    auto type = types.type_of(cfg, t);
    if (!type) return std::move(type).status();
  }
  return {};
}

}  // namespace graft::synth
