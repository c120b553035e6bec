// graft: the host binary. Dispatches to one command; every user-caused error is one line on
// stderr and a non-zero exit, never an uncaught exception.
#include <cstdio>
#include <exception>
#include <string>
#include <string_view>
#include <vector>

#include "cli/commands.hpp"
#include "common/log.hpp"
#include "graft/version.hpp"

namespace {

struct Command {
  const char* name;
  int (*fn)(const graft::cli::Args&);
  const char* help;
};

constexpr Command kCommands[] = {
    {"run", graft::cli::cmd_run, "generate text from a prompt"},
    {"serve", graft::cli::cmd_serve, "HTTP server: OpenAI and Anthropic APIs, chat page, /metrics (docs/serve.md)"},
    {"perplexity", graft::cli::cmd_perplexity, "perplexity --model M --file TEXT --ctx N [--chunks K]"},
    {"plan", graft::cli::cmd_plan, "plan [--model M] [--ctx N|auto] [--parallel N] [--memory SIZE]: memory, does it fit"},
    {"bench", graft::cli::cmd_bench, "prefill/decode tok/s and decode bandwidth vs the machine's"},
    {"plugins", graft::cli::cmd_plugins, "list discovered plugins (kind, name, version, ABI, path)"},
    {"profile", graft::cli::cmd_profile, "profile check FILE: validate a TOML profile"},
    {"info", graft::cli::cmd_info, "info MODEL: GGUF metadata, tensor types and sizes"},
    {"tokenize", graft::cli::cmd_tokenize, "tokenize --model FILE (--prompt TEXT | --prompt-file FILE) [--ids]"},
    {"synth", graft::cli::cmd_synth, "synth --arch llama|qwen3 --out FILE [--preset NAME]: random-weight model"},
    {"quantize", graft::cli::cmd_quantize, "quantize IN.gguf OUT.gguf --type T: rewrite a model in other weight types"},
};

void usage(std::FILE* out) {
  std::fprintf(out, "graft %s (plugin ABI %u): modular LLM inference engine\n\n", GRAFT_VERSION_STRING,
               graft::kAbiVersion);
  std::fprintf(out, "usage: graft <command> [options]   (graft <command> --help for its options)\n\ncommands:\n");
  for (const auto& c : kCommands) std::fprintf(out, "  %-10s %s\n", c.name, c.help);
  std::fprintf(out, "\nenvironment: GRAFT_PLUGIN_PATH (':'-separated plugin folders), GRAFT_LOG_LEVEL, GRAFT_API_KEY (graft serve)\n");
}

}  // namespace

int main(int argc, char** argv) {
  const char* level_env = std::getenv("GRAFT_LOG_LEVEL");
  bool level_ok = true;
  graft::init_logging(level_env ? graft::parse_log_level(level_env, &level_ok) : graft::LogLevel::warn);
  if (!level_ok) spdlog::warn("GRAFT_LOG_LEVEL='{}' is not one of trace|debug|info|warn|error; using info", level_env);

  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  std::string_view name = argv[1];
  if (name == "--help" || name == "-h" || name == "help") {
    usage(stdout);
    return 0;
  }
  if (name == "--version") {
    std::printf("graft %s (plugin ABI %u)\n", GRAFT_VERSION_STRING, graft::kAbiVersion);
    return 0;
  }
  graft::cli::Args args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (name != c.name) continue;
    try {
      return c.fn(args);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "graft %s: internal error: %s\n", c.name, e.what());
      return 1;
    }
  }
  std::fprintf(stderr, "graft: unknown command '%s' (try 'graft --help')\n", argv[1]);
  return 2;
}
