#include "quantize/type_policy.hpp"

#include <fmt/format.h>

namespace graft::quantize {
namespace {

constexpr std::string_view kOutput = "output.weight";
constexpr std::string_view kTokenEmbd = "token_embd.weight";
// llama.cpp keeps the output projection at q6_k for types below this many bits per weight.
constexpr double kOutputMinBits = 6.0;

}  // namespace

Expected<TypePolicy> TypePolicy::create(const TypeOptions& options, const TypeCatalog& catalog) {
  TypePolicy p;
  p.catalog_ = &catalog;
  p.options_ = options;
  auto type = catalog.resolve(options.type, "--type " + options.type);
  if (!type) return std::move(type).status();
  p.type_ = *type;
  const std::pair<const std::string*, std::optional<TypeId>*> optional_types[] = {
      {&options.output_type, &p.output_}, {&options.embd_type, &p.embd_}, {&options.fallback_type, &p.fallback_}};
  const char* flags[] = {"--output-type", "--embd-type", "--fallback-type"};
  for (std::size_t k = 0; k < 3; ++k) {
    if (optional_types[k].first->empty()) continue;
    auto id = catalog.resolve(*optional_types[k].first, fmt::format("{} {}", flags[k], *optional_types[k].first));
    if (!id) return std::move(id).status();
    *optional_types[k].second = *id;
  }
  for (const std::string& text : options.tensor_types) {
    const std::size_t eq = text.rfind('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == text.size())
      return Status(Errc::invalid_argument, fmt::format("--tensor-type '{}': expected REGEX=TYPE", text));
    const std::string regex = text.substr(0, eq);
    auto id = catalog.resolve(text.substr(eq + 1), "--tensor-type " + text);
    if (!id) return std::move(id).status();
    try {
      p.overrides_.push_back({text, std::regex(regex, std::regex::ECMAScript), *id});
    } catch (const std::regex_error& e) {
      return Status(Errc::invalid_argument,
                    fmt::format("--tensor-type '{}': bad regular expression '{}': {}", text, regex, e.what()));
    }
  }
  return p;
}

Expected<TypeChoice> TypePolicy::output_rule() const {
  if (output_) return TypeChoice{*output_, "--output-type"};
  const double bits = catalog_->bits_per_weight(type_);
  if (!options_.q6_k_output_default || bits >= kOutputMinBits) return TypeChoice{type_, "--type"};
  auto q6_k = catalog_->resolve("q6_k", "q6_k");
  if (!q6_k)
    return Status(Errc::not_found,
                  fmt::format("the output projection defaults to q6_k when --type has under 6 bits per weight ({} has "
                              "{:.4g}), but no weight-format plugin provides q6_k: pass --output-type T (e.g. --output-type "
                              "q8_0, or --output-type {} to keep it at --type)",
                              catalog_->name(type_), bits, catalog_->name(type_)));
  return TypeChoice{*q6_k, "output default (q6_k below 6 bits/weight)"};
}

Expected<TypeChoice> TypePolicy::choose(std::string_view name, std::span<const std::uint64_t> ne, bool has_output) const {
  if (ne.size() <= 1) return TypeChoice{type_id::f32, "1-D"};
  // A delta-net's convolution taps ({Kc, channels}: rows of 4) stay f32, as llama-quantize keeps them.
  if (name.find("ssm_conv1d") != std::string_view::npos) return TypeChoice{type_id::f32, "delta-net convolution"};
  TypeChoice choice;
  bool decided = false;
  for (const auto& o : overrides_) {
    if (!std::regex_search(name.begin(), name.end(), o.pattern)) continue;
    choice = {o.type, "--tensor-type " + o.text};
    decided = true;
    break;
  }
  if (!decided) {
    if (name == kTokenEmbd && embd_) {
      choice = {*embd_, "--embd-type"};
    } else if (name == kOutput || (name == kTokenEmbd && !has_output)) {
      auto out = output_rule();
      if (!out) return Status(out.status().code(), fmt::format("{}: {}", name, out.status().message()));
      choice = std::move(*out);
      if (name == kTokenEmbd) choice.why += " (tied output)";
    } else {
      choice = {type_, "--type"};
    }
  }
  const std::uint64_t row = ne[0];
  const std::uint32_t block = catalog_->block_elems(choice.type);
  if (block != 0 && row % block == 0) return choice;
  const std::string chosen = catalog_->name(choice.type);
  if (!fallback_)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: rows of {} elements are not a multiple of the {} block size {} ({}); pass "
                              "--fallback-type T (e.g. f16) to write such tensors in another type",
                              name, row, chosen, block, choice.why));
  const std::uint32_t fb_block = catalog_->block_elems(*fallback_);
  if (fb_block == 0 || row % fb_block != 0)
    return Status(Errc::invalid_argument,
                  fmt::format("{}: rows of {} elements are not a multiple of the {} block size {} ({}), nor of the "
                              "--fallback-type {} block size {}",
                              name, row, chosen, block, choice.why, catalog_->name(*fallback_), fb_block));
  return TypeChoice{*fallback_, fmt::format("--fallback-type (rows of {} do not fit {})", row, chosen)};
}

}  // namespace graft::quantize
