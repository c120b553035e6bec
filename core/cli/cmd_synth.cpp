// `graft synth`: writes a deterministic random-weight model GGUF (llama or qwen3 layout, synthetic
// byte-level BPE tokenizer) for tests and benchmarks. See docs/synth.md.
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "synth/synth_config.hpp"
#include "synth/synth_model.hpp"
#include "synth/synth_types.hpp"

namespace graft::cli {
namespace {

constexpr const char* kUsage =
    "usage: graft synth --arch llama|qwen3 --out FILE [--preset NAME] [--n-embd N --n-layer N --n-head N\n"
    "       --n-head-kv N --n-ff N --n-vocab N --head-dim N --ctx N] [--tied] [--type T] [--embd-type T]\n"
    "       [--output-type T] [--tensor-type REGEX=T]... [--fallback-type T] [--seed S] [-t N] [--shape-only]";

struct ShapeFlag {
  const char* name;
  std::int64_t synth::SynthConfig::*field;
  const char* help;
};

constexpr ShapeFlag kShapeFlags[] = {
    {"n-embd", &synth::SynthConfig::n_embd, "embedding width"},
    {"n-layer", &synth::SynthConfig::n_layer, "number of blocks"},
    {"n-head", &synth::SynthConfig::n_head, "attention heads"},
    {"n-head-kv", &synth::SynthConfig::n_head_kv, "key/value heads (GQA); must divide --n-head"},
    {"n-ff", &synth::SynthConfig::n_ff, "feed-forward width"},
    {"n-vocab", &synth::SynthConfig::n_vocab, "vocabulary size (>= 260)"},
    {"head-dim", &synth::SynthConfig::head_dim, "head size (default n_embd / n_head)"},
    {"ctx", &synth::SynthConfig::ctx, "context_length stored in the file"},
};

std::string presets_help() {
  std::string s = "presets:\n";
  for (const auto& p : synth::presets()) {
    s += fmt::format("  {:<12} {:<6} d={} layers={} heads={}/{} ff={} vocab={}{}: {}\n", p.name,
                     p.arch.empty() ? "any" : p.arch, p.n_embd, p.n_layer, p.n_head, p.n_head_kv, p.n_ff, p.n_vocab,
                     p.tied ? " tied" : "", p.help);
  }
  return s;
}

std::string human(std::uint64_t n) {
  if (n >= (1ull << 30)) return fmt::format("{:.2f} GiB", static_cast<double>(n) / (1ull << 30));
  return fmt::format("{:.2f} MiB", static_cast<double>(n) / (1ull << 20));
}

// Progress for models big enough to take a while: a rewritten line on a terminal, a line per
// 10% otherwise (logs).
class Progress {
 public:
  explicit Progress(std::uint64_t total) : enabled_(total >= (64ull << 20)), tty_(::isatty(2) != 0) {}
  void operator()(std::uint64_t done, std::uint64_t total, std::string_view tensor) {
    if (!enabled_) return;
    const int percent = static_cast<int>(done * 100 / total);
    if (tty_) {
      std::fprintf(stderr, "\rgraft synth: %3d%% (%s of %s) %-32.*s", percent, human(done).c_str(), human(total).c_str(),
                   static_cast<int>(tensor.size()), tensor.data());
      if (done == total) std::fputc('\n', stderr);
    } else if (percent / 10 > last_ / 10 || done == total) {
      std::fprintf(stderr, "graft synth: %d%% (%s of %s)\n", percent, human(done).c_str(), human(total).c_str());
    }
    last_ = percent;
  }

 private:
  bool enabled_, tty_;
  int last_ = 0;
};

int fail(const Status& s) {
  std::fprintf(stderr, "graft synth: %s\n", s.message().c_str());
  return s.code() == Errc::invalid_argument ? 2 : 1;
}

}  // namespace

int cmd_synth(const Args& args) {
  po::options_description desc(std::string(kUsage) + "\noptions");
  auto add = desc.add_options();
  add("help,h", "show this help");
  add("arch", po::value<std::string>()->value_name("NAME"), "llama or qwen3 (implied by the qwen3-* and bench presets)");
  add("out,o", po::value<std::string>()->value_name("FILE"), "GGUF file to write");
  add("preset", po::value<std::string>()->value_name("NAME"), "start from a preset's shapes (default: tiny)");
  for (const auto& f : kShapeFlags) add(f.name, po::value<std::int64_t>()->value_name("N"), f.help);
  add("tied", po::bool_switch(), "no output.weight: the output projection reuses token_embd");
  add("type", po::value<std::string>()->value_name("T"), "matrix type: f32 (built in) or any weight-format plugin's type (default f32)");
  add("embd-type", po::value<std::string>()->value_name("T"), "token_embd type (default: --type)");
  add("output-type", po::value<std::string>()->value_name("T"), "output.weight type, token_embd's when --tied (default: --type)");
  add("tensor-type", po::value<std::vector<std::string>>()->value_name("REGEX=T")->composing(),
      "type of the tensors whose name matches REGEX (repeatable; the first match wins)");
  add("fallback-type", po::value<std::string>()->value_name("T"), "type for tensors whose rows are not whole blocks of theirs");
  add("seed", po::value<std::int64_t>()->value_name("S"), "weight seed (default 0)");
  add("full-attention-interval", po::value<std::int64_t>()->value_name("N"),
      "qwen35: every Nth layer is full attention, the others gated delta-nets (default: the preset's, 4)");
  add("nextn", po::value<std::int64_t>()->value_name("N"),
      "also N MTP (nextn) blocks after the main layers, for the mtp drafter (default 0)");
  add("threads,t", po::value<int>()->value_name("N"), "generation and quantization threads (default: all cores); the file does not depend on N");
  add("plugin-dir", po::value<std::vector<std::string>>()->value_name("DIR")->composing(), "search DIR for weight-format plugins first (repeatable)");
  add("dry-run", po::bool_switch(), "print the shapes and parameter count, write nothing");
  add("shape-only", po::bool_switch(),
      "write the header and leave the tensor data a sparse hole of zeros: the shapes and size of the model for graft "
      "plan, written at once and taking no disk (its outputs mean nothing)");

  auto vm = parse_options(args, desc);
  if (!vm) {
    std::fprintf(stderr, "graft synth: %s (try 'graft synth --help')\n", vm.status().message().c_str());
    return 2;
  }
  if (vm->count("help")) {
    std::printf("%s\n%s", (std::ostringstream() << desc).str().c_str(), presets_help().c_str());
    return 0;
  }

  synth::SynthConfig cfg;
  if (vm->count("preset")) {
    const auto& name = (*vm)["preset"].as<std::string>();
    const synth::Preset* p = synth::find_preset(name);
    if (!p) {
      std::string names;
      for (const auto& q : synth::presets()) names += (names.empty() ? "" : ", ") + std::string(q.name);
      return fail(Status(Errc::invalid_argument, fmt::format("unknown --preset '{}' (known: {})", name, names)));
    }
    synth::apply_preset(*p, cfg);
  } else {
    synth::apply_preset(*synth::find_preset("tiny"), cfg);
    cfg.preset = "custom";
  }
  if (vm->count("arch")) {
    const auto& arch = (*vm)["arch"].as<std::string>();
    if (!cfg.arch.empty() && arch != cfg.arch)
      return fail(Status(Errc::invalid_argument, fmt::format("--arch {} conflicts with --preset {} ({})", arch, cfg.preset, cfg.arch)));
    cfg.arch = arch;
  }
  for (const auto& f : kShapeFlags)
    if (vm->count(f.name)) cfg.*f.field = (*vm)[f.name].as<std::int64_t>();
  if ((*vm)["tied"].as<bool>()) cfg.tied = true;
  if (vm->count("full-attention-interval")) {
    const auto n = (*vm)["full-attention-interval"].as<std::int64_t>();
    if (cfg.arch != "qwen35")
      return fail(Status(Errc::invalid_argument, "--full-attention-interval is for qwen35 presets only"));
    if (n < 1 || n > 1024)
      return fail(Status(Errc::invalid_argument, fmt::format("--full-attention-interval {} is out of range: 1..1024", n)));
    cfg.hybrid.interval = n;
  }
  if (vm->count("nextn")) cfg.nextn = (*vm)["nextn"].as<std::int64_t>();
  if (vm->count("type")) cfg.type = (*vm)["type"].as<std::string>();
  if (vm->count("embd-type")) cfg.embd_type = (*vm)["embd-type"].as<std::string>();
  if (vm->count("output-type")) cfg.output_type = (*vm)["output-type"].as<std::string>();
  if (vm->count("fallback-type")) cfg.fallback_type = (*vm)["fallback-type"].as<std::string>();
  if (vm->count("tensor-type")) cfg.tensor_types = (*vm)["tensor-type"].as<std::vector<std::string>>();
  if (vm->count("seed")) {
    const auto seed = (*vm)["seed"].as<std::int64_t>();
    if (seed < 0) return fail(Status(Errc::invalid_argument, fmt::format("--seed {} is out of range: must be >= 0", seed)));
    cfg.seed = static_cast<std::uint64_t>(seed);
  }
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  if (vm->count("threads")) {
    const int t = (*vm)["threads"].as<int>();
    if (t < 1 || t > 1024)
      return fail(Status(Errc::invalid_argument, fmt::format("--threads {} is out of range: must be in 1..1024", t)));
    threads = static_cast<unsigned>(t);
  }
  if (Status s = synth::validate(cfg); !s.ok()) return fail(s);
  const bool dry_run = (*vm)["dry-run"].as<bool>();
  if (!dry_run && !vm->count("out")) return fail(Status(Errc::invalid_argument, "--out FILE is required"));

  std::vector<std::filesystem::path> dirs;
  if (vm->count("plugin-dir"))
    for (const auto& d : (*vm)["plugin-dir"].as<std::vector<std::string>>()) dirs.emplace_back(d);
  auto types = synth::resolve_types(cfg, dirs);
  if (!types) return fail(types.status());  // unknown type or bad pattern: 2; plugin trouble: 1
  if (Status s = synth::check_geometry(cfg, **types); !s.ok()) return fail(s);

  const std::uint64_t params = synth::parameter_count(cfg);
  const std::string shape = fmt::format("{} d={} layers={} heads={}/{} head_dim={} ff={} vocab={}{}", cfg.arch, cfg.n_embd,
                                        cfg.n_layer, cfg.n_head, cfg.n_head_kv, cfg.head_dim_or_default(), cfg.n_ff,
                                        cfg.n_vocab, cfg.tied ? " tied" : "");
  if (dry_run) {
    std::printf("%s: %s, %llu parameters (%.1fM)\n", cfg.preset.c_str(), shape.c_str(),
                static_cast<unsigned long long>(params), static_cast<double>(params) / 1e6);
    return 0;
  }
  const std::filesystem::path out = (*vm)["out"].as<std::string>();
  std::uint64_t total = 0;
  for (const auto& t : synth::plan_tensors(cfg)) {
    std::uint64_t rows = 1;
    for (std::size_t j = 1; j < t.ne.size(); ++j) rows *= t.ne[j];
    total += *(*types)->catalog->table().row_bytes(*(*types)->type_of(cfg, t), t.ne[0]) * rows;
  }
  Progress progress(total);
  const bool shape_only = (*vm)["shape-only"].as<bool>();
  auto summary = synth::write_model(cfg, **types, out, threads, std::ref(progress), shape_only);
  if (!summary) {
    std::fprintf(stderr, "graft synth: %s\n", summary.status().message().c_str());
    return 1;
  }
  std::printf("wrote %s: %s, %llu parameters (%.1fM), %s weights, %s of tensor data%s\n", out.string().c_str(),
              shape.c_str(), static_cast<unsigned long long>(summary->parameters),
              static_cast<double>(summary->parameters) / 1e6, cfg.type.c_str(), human(summary->tensor_bytes).c_str(),
              shape_only ? " (shapes only: the data is a sparse hole of zeros, for graft plan)" : "");
  return 0;
}

}  // namespace graft::cli
