#include <cstdio>

#include "cli/commands.hpp"

namespace graft::cli {
// Generation needs the CPU backend's ops, the weight formats and the llama/qwen3 forward pass,
// which land with the next milestone; until then this says so instead of pretending.
int cmd_run(const Args&) {
  std::fprintf(stderr, "graft run: not implemented yet (the CPU forward pass is the next milestone); "
                       "available now: plugins, profile check, info, tokenize\n");
  return 1;
}
}  // namespace graft::cli
