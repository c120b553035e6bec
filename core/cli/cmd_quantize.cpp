// `graft quantize IN.gguf OUT.gguf --type T`: rewrites a model's tensors in other weight types,
// chosen per tensor by quantize::TypePolicy. See docs/quantize.md.
#include <unistd.h>

#include <fmt/format.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <thread>

#include "cli/commands.hpp"
#include "common/human_bytes.hpp"
#include "cli/options.hpp"
#include "gguf/gguf_file.hpp"
#include "quantize/quantizer.hpp"
#include "quantize/type_catalog.hpp"
#include "quantize/type_policy.hpp"

namespace graft::cli {
namespace {

constexpr const char* kUsage =
    "usage: graft quantize IN.gguf OUT.gguf --type T [--output-type T] [--embd-type T]\n"
    "       [--tensor-type REGEX=T]... [--fallback-type T] [-t N] [--plugin-dir DIR]... [--dry-run] [-v]";

int fail(const Status& s) {
  std::fprintf(stderr, "graft quantize: %s\n", s.message().c_str());
  return s.code() == Errc::invalid_argument ? 2 : 1;
}

Status usage_error(std::string message) { return Status(Errc::invalid_argument, std::move(message)); }

// A rewritten line on a terminal; a line per 10% otherwise, for models big enough to take a while.
class Progress {
 public:
  explicit Progress(std::uint64_t total) : enabled_(total >= (64ull << 20)), tty_(::isatty(2) != 0) {}
  void operator()(std::uint64_t done, std::uint64_t total, std::string_view tensor) {
    if (!enabled_) return;
    const int percent = static_cast<int>(done * 100 / total);
    if (tty_) {
      std::fprintf(stderr, "\rgraft quantize: %3d%% (%s of %s) %-32.*s", percent, human_bytes(done).c_str(),
                   human_bytes(total).c_str(), static_cast<int>(tensor.size()), tensor.data());
      if (done == total) std::fputc('\n', stderr);
    } else if (percent / 10 > last_ / 10 || done == total) {
      std::fprintf(stderr, "graft quantize: %d%% (%s of %s)\n", percent, human_bytes(done).c_str(), human_bytes(total).c_str());
    }
    last_ = percent;
  }

 private:
  bool enabled_, tty_;
  int last_ = 0;
};

double bits(std::uint64_t bytes, std::uint64_t elements) { return elements ? 8.0 * bytes / elements : 0.0; }

void print_summary(const quantize::Plan& plan, const quantize::TypeCatalog& catalog, bool verbose) {
  if (verbose) {
    for (const auto& p : plan.tensors)
      std::printf("  %-40s %-6s -> %-6s %s\n", p.input->name.c_str(), catalog.name(p.input->type).c_str(),
                  catalog.name(p.type).c_str(), p.why.c_str());
  }
  const quantize::Totals t = quantize::totals(plan);
  std::printf("  %-8s %8s %14s %12s %12s\n", "type", "tensors", "elements", "size", "bits/weight");
  for (const auto& x : t.by_type)
    std::printf("  %-8s %8llu %14llu %12s %12.2f\n", catalog.name(x.type).c_str(), static_cast<unsigned long long>(x.tensors),
                static_cast<unsigned long long>(x.elements), human_bytes(x.bytes).c_str(), bits(x.bytes, x.elements));
  std::printf("size: %s -> %s (%.2f -> %.2f bits per weight, %llu tensors, %llu parameters)\n",
              human_bytes(t.bytes_before).c_str(), human_bytes(t.bytes_after).c_str(), bits(t.bytes_before, t.elements),
              bits(t.bytes_after, t.elements), static_cast<unsigned long long>(t.tensors),
              static_cast<unsigned long long>(t.elements));
}

}  // namespace

int cmd_quantize(const Args& args) {
  po::options_description desc(std::string(kUsage) + "\noptions");
  auto add = desc.add_options();
  add("help,h", "show this help");
  add("in", po::value<std::string>()->value_name("IN.gguf"), "model to read (F32, F16, BF16 or any type a plugin reads)");
  add("out", po::value<std::string>()->value_name("OUT.gguf"), "model to write");
  add("type", po::value<std::string>()->value_name("T"), "type of the matrices: f32 or any weight-format plugin's type");
  add("output-type", po::value<std::string>()->value_name("T"),
      "output.weight type, token_embd's when there is no output.weight (default: q6_k when --type has under 6 "
      "bits per weight, else --type)");
  add("embd-type", po::value<std::string>()->value_name("T"), "token_embd type (default: --type; the output rule when tied)");
  add("tensor-type", po::value<std::vector<std::string>>()->value_name("REGEX=T")->composing(),
      "type of the tensors whose name matches REGEX (ECMAScript, searched anywhere in the name; repeatable, the "
      "first match wins, before every other rule)");
  add("fallback-type", po::value<std::string>()->value_name("T"),
      "type for tensors whose rows are not whole blocks of their type (default: such tensors are an error)");
  add("threads,t", po::value<int>()->value_name("N"), "conversion threads (default: all cores)");
  add("plugin-dir", po::value<std::vector<std::string>>()->value_name("DIR")->composing(),
      "search DIR for weight-format plugins first (repeatable)");
  add("dry-run", po::bool_switch(), "print every tensor's type and the sizes, write nothing");
  add("verbose,v", po::bool_switch(), "list every tensor: input type -> output type and the rule that chose it");
  po::positional_options_description positional;
  positional.add("in", 1).add("out", 1);

  auto vm = parse_options(args, desc, positional);
  if (!vm) {
    std::fprintf(stderr, "graft quantize: %s (try 'graft quantize --help')\n", vm.status().message().c_str());
    return 2;
  }
  if (vm->count("help")) {
    std::printf("%s\n", (std::ostringstream() << desc).str().c_str());
    return 0;
  }
  const bool dry_run = (*vm)["dry-run"].as<bool>();
  if (!vm->count("in")) return fail(usage_error("IN.gguf is required"));
  if (!vm->count("out") && !dry_run) return fail(usage_error("OUT.gguf is required"));
  if (!vm->count("type")) return fail(usage_error("--type T is required"));
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  if (vm->count("threads")) {
    const int t = (*vm)["threads"].as<int>();
    if (t < 1 || t > 1024) return fail(usage_error(fmt::format("--threads {} is out of range: must be in 1..1024", t)));
    threads = static_cast<unsigned>(t);
  }

  const std::filesystem::path in = (*vm)["in"].as<std::string>();
  std::error_code ec;
  if (!std::filesystem::is_regular_file(in, ec))
    return fail(Status(Errc::not_found, fmt::format("{}: no such file", in.string())));
  std::filesystem::path out;
  if (vm->count("out")) {
    out = (*vm)["out"].as<std::string>();
    if (std::filesystem::equivalent(in, out, ec) ||
        std::filesystem::weakly_canonical(in, ec) == std::filesystem::weakly_canonical(out, ec))
      return fail(usage_error(fmt::format("OUT.gguf is IN.gguf ({}): write the quantized model to another file", out.string())));
  }

  quantize::TypeOptions options;
  options.type = (*vm)["type"].as<std::string>();
  if (vm->count("output-type")) options.output_type = (*vm)["output-type"].as<std::string>();
  if (vm->count("embd-type")) options.embd_type = (*vm)["embd-type"].as<std::string>();
  if (vm->count("fallback-type")) options.fallback_type = (*vm)["fallback-type"].as<std::string>();
  if (vm->count("tensor-type")) options.tensor_types = (*vm)["tensor-type"].as<std::vector<std::string>>();

  std::vector<std::filesystem::path> dirs;
  if (vm->count("plugin-dir"))
    for (const auto& d : (*vm)["plugin-dir"].as<std::vector<std::string>>()) dirs.emplace_back(d);
  auto catalog = quantize::TypeCatalog::load(dirs);
  if (!catalog) return fail(Status(Errc::not_found, catalog.status().message()));
  auto policy = quantize::TypePolicy::create(options, **catalog);
  if (!policy) return fail(policy.status());

  auto file = gguf::File::open(in, (*catalog)->table());
  if (!file) return fail(Status(Errc::corrupt, file.status().message()));
  auto plan = quantize::plan_model(**file, *policy, **catalog);
  if (!plan) return fail(plan.status());

  std::size_t requantized = 0;
  for (const auto& p : plan->tensors) requantized += p.requantized;
  if (requantized > 0)
    std::fprintf(stderr,
                 "graft quantize: warning: requantizing %zu tensors from an already quantized type: the result is worse "
                 "than quantizing the F16/BF16/F32 original\n",
                 requantized);
  if (!plan->file_type)
    std::fprintf(stderr, "graft quantize: note: llama.cpp has no file type for --type %s: general.file_type is not written\n",
                 (*catalog)->name(policy->type()).c_str());

  const bool verbose = (*vm)["verbose"].as<bool>();
  if (dry_run) {
    std::printf("%s (dry run, nothing written):\n", in.string().c_str());
    print_summary(*plan, **catalog, verbose);
    return 0;
  }
  const quantize::Totals totals = quantize::totals(*plan);
  Progress progress(totals.bytes_after);
  if (Status s = quantize::write_model(**file, *plan, **catalog, out, threads, std::ref(progress)); !s.ok()) return fail(s);
  std::printf("wrote %s:\n", out.string().c_str());
  print_summary(*plan, **catalog, verbose);
  return 0;
}

}  // namespace graft::cli
