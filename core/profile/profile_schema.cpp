#include "profile/profile_schema.hpp"

#include <charconv>
#include <cmath>

namespace graft::schema {

namespace {

// A captureless lambda reaching one field; unary + turns it into the Accessor the variant holds.
#define GRAFT_FIELD(T, expr) Field(+[](Profile& p) -> T& { return expr; })

using Path = std::filesystem::path;
using Int = std::int64_t;

const KeySpec kTopLevel[] = {
    {.key = "plugin_dirs", .field = GRAFT_FIELD(std::vector<Path>, p.plugin_dirs),
     .help = "folders searched for plugins before $GRAFT_PLUGIN_PATH and the install folder; relative to this file"},
};

const KeySpec kModel[] = {
    {.key = "path", .field = GRAFT_FIELD(Path, p.model), .non_empty = true,
     .help = "the GGUF model file, relative to this file; --model overrides it"},
};

const KeySpec kBackend[] = {
    {.key = "name", .field = GRAFT_FIELD(std::string, p.backend.name), .non_empty = true,
     .help = "backend plugin: cpu, cuda, ..."},
    {.key = "threads", .field = GRAFT_FIELD(Int, p.threads), .min = 0, .max = 4096,
     .help = "CPU threads; 0 = all cores"},
};

const KeySpec kKv[] = {
    {.key = "store", .field = GRAFT_FIELD(std::string, p.kv.name), .non_empty = true,
     .help = "KV-cache store plugin: device, quant, sysram, ..."},
};

const KeySpec kSpeculative[] = {
    {.key = "enabled", .field = GRAFT_FIELD(bool, p.speculative.enabled),
     .help = "draft with the [[drafter]] tables and verify; needs at least one drafter"},
    {.key = "max_nodes", .field = GRAFT_FIELD(Int, p.speculative.max_nodes), .min = 1, .max = 256,
     .help = "most draft tokens (tree nodes) verified per round"},
    {.key = "max_depth", .field = GRAFT_FIELD(Int, p.speculative.max_depth), .min = 1, .max = 64,
     .help = "longest draft chain per round; at most max_nodes"},
    {.key = "adaptive", .field = GRAFT_FIELD(bool, p.speculative.adaptive),
     .help = "learn from every round: verify only the drafted nodes likely to pay for their share of the verify "
             "pass, ask each drafter for as many tokens as pay, skip a drafter whose gain is below its cost"},
    {.key = "draft_length", .field = GRAFT_FIELD(Int, p.speculative.draft_length), .min = 0, .max = 64,
     .help = "tokens asked of every drafter per round; 0 = learnt per drafter (with adaptive), else pinned "
             "(experiments)"},
    {.key = "policy_file", .field = GRAFT_FIELD(Path, p.speculative.policy_file), .non_empty = true,
     .help = "keep what the round policy learnt (costs, chances, gains) in this file across runs: read at start "
             "when it fits the model and drafters, written at the end; relative to the profile"},
};

const KeySpec kDrafter[] = {
    // Only reached while parsing that element, after the parser appended it.
    {.key = "name", .field = GRAFT_FIELD(std::string, p.drafters.back().name), .required = true, .non_empty = true,
     .help = "drafter plugin: ngram, mtp, dflash2, ...; several tables fuse their drafters into one tree per round"},
};

const KeySpec kSampling[] = {
    {.key = "temperature", .field = GRAFT_FIELD(double, p.sampling.temperature), .min = 0, .max = 100,
     .help = "sampling temperature; 0 = greedy"},
    {.key = "top_k", .field = GRAFT_FIELD(Int, p.sampling.top_k), .min = 0,
     .help = "keep only the k most likely tokens; 0 = off"},
    {.key = "top_p", .field = GRAFT_FIELD(double, p.sampling.top_p), .min = 0, .max = 1,
     .help = "keep the most likely tokens up to this probability mass; 1 = off"},
    {.key = "min_p", .field = GRAFT_FIELD(double, p.sampling.min_p), .min = 0, .max = 1,
     .help = "drop tokens below min_p times the top probability; 0 = off"},
    {.key = "repeat_penalty", .field = GRAFT_FIELD(double, p.sampling.repeat_penalty), .min = 0.01, .max = 10,
     .help = "penalize recently seen tokens by this factor; 1 = off"},
    {.key = "repeat_last_n", .field = GRAFT_FIELD(Int, p.sampling.repeat_last_n), .min = -1,
     .help = "tokens the repeat penalty looks back; -1 = whole context, 0 = off"},
    {.key = "presence_penalty", .field = GRAFT_FIELD(double, p.sampling.presence_penalty), .min = -2, .max = 2,
     .help = "subtract from the logits of tokens already present; 0 = off"},
    {.key = "seed", .field = GRAFT_FIELD(Int, p.sampling.seed), .min = -1, .help = "random seed; -1 = a new one each run"},
};

const KeySpec kContext[] = {
    {.key = "size", .field = GRAFT_FIELD(Int, p.context), .min = 16, .max = 1 << 24, .auto_word = "auto",
     .help = "context length in tokens (prompt + generated); \"auto\" = the largest that fits in memory "
             "(graft plan)"},
    {.key = "max_tokens", .field = GRAFT_FIELD(Int, p.max_tokens), .min = -1,
     .help = "tokens to generate; -1 = until end of sequence or the context is full"},
};

const KeySpec kGeneration[] = {
    {.key = "prompt", .field = GRAFT_FIELD(std::string, p.prompt), .help = "default prompt; --prompt overrides it"},
};

#undef GRAFT_FIELD

const SectionSpec kSections[] = {
    {.name = "", .keys = kTopLevel, .help = "top-level keys"},
    {.name = "model", .keys = kModel, .help = "the model to run"},
    {.name = "backend", .keys = kBackend, .plugin = [](Profile& p) -> PluginChoice& { return p.backend; },
     .plugin_kind = "backend", .help = "compute backend; other keys go to the backend plugin"},
    {.name = "kv", .keys = kKv, .plugin = [](Profile& p) -> PluginChoice& { return p.kv; },
     .plugin_kind = "kv store", .help = "KV-cache store; other keys go to the store plugin"},
    {.name = "speculative", .keys = kSpeculative, .help = "speculative decoding"},
    {.name = "drafter", .keys = kDrafter, .array_of_tables = true,
     .plugin = [](Profile& p) -> PluginChoice& { return p.drafters.emplace_back(); }, .plugin_kind = "drafter",
     .help = "one table per drafter; other keys go to the drafter plugin"},
    {.name = "sampling", .keys = kSampling, .help = "token sampling"},
    {.name = "context", .keys = kContext, .help = "context window and generation length"},
    {.name = "generation", .keys = kGeneration, .help = "generation defaults"},
};

bool bounded(double bound) { return std::isfinite(bound) && std::abs(bound) < 1e300; }

}  // namespace

std::span<const SectionSpec> sections() { return kSections; }

const SectionSpec* find_section(std::string_view name) {
  for (const auto& s : kSections)
    if (s.name == name) return &s;
  return nullptr;
}

const KeySpec* find_key(const SectionSpec& section, std::string_view key) {
  for (const auto& k : section.keys)
    if (k.key == key) return &k;
  return nullptr;
}

const SectionSpec* section_defining(std::string_view key) {
  for (const auto& s : kSections)
    if (find_key(s, key)) return &s;
  return nullptr;
}

const char* type_name(const KeySpec& spec) {
  switch (spec.field.index()) {
    case 0: return "boolean";
    case 1: return spec.auto_word.empty() ? "integer" : "integer or \"auto\"";
    case 2: return "number";
    case 3: return "string";
    case 4: return "string";
    case 5: return "array of strings";
  }
  return "?";
}

std::string table_header(const SectionSpec& section) {
  if (section.name.empty()) return "the top level";
  // Appends rather than "lit" + string: GCC 12 warns falsely (-Wrestrict) on the latter.
  std::string out(section.array_of_tables ? "[[" : "[");
  out.append(section.name).append(section.array_of_tables ? "]]" : "]");
  return out;
}

std::string setting_name(const SectionSpec& section, std::string_view key, std::optional<std::size_t> index) {
  std::string out(section.name);
  if (index) out.append("[").append(std::to_string(*index)).append("]");
  if (!out.empty() && !key.empty()) out += ".";
  out += key;
  return out;
}

std::string format_number(std::int64_t value) { return std::to_string(value); }

std::string format_number(double value) {
  if (std::isnan(value)) return "nan";
  if (std::isinf(value)) return value > 0 ? "inf" : "-inf";
  if (value == std::trunc(value) && std::abs(value) < 1e15) return std::to_string(static_cast<std::int64_t>(value));
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);  // shortest round-trip form
  return ec == std::errc() ? std::string(buf, end) : std::to_string(value);
}

std::string range_text(double min, double max) {
  const bool lo = bounded(min), hi = bounded(max);
  if (lo && hi) return format_number(min) + ".." + format_number(max);
  if (lo) return std::string(">= ").append(format_number(min));
  if (hi) return std::string("<= ").append(format_number(max));
  return {};
}

std::string out_of_range(std::string_view setting, const std::string& value_text, double min, double max) {
  const std::string range = range_text(min, max);
  const std::string must = range.find("..") != std::string::npos ? std::string("in ").append(range) : range;
  return std::string(setting) + " = " + value_text + " is out of range: must be " + must;
}

std::optional<std::string> range_error(const KeySpec& spec, std::string_view setting, double value) {
  if (value >= spec.min && value <= spec.max) return std::nullopt;  // false for NaN
  return out_of_range(setting, format_number(value), spec.min, spec.max);
}

std::optional<std::string> range_error(const KeySpec& spec, std::string_view setting, std::int64_t value) {
  const auto v = static_cast<double>(value);
  if (v >= spec.min && v <= spec.max) return std::nullopt;
  return out_of_range(setting, format_number(value), spec.min, spec.max);  // exact digits, not the double's
}

}  // namespace graft::schema
