#include <cstdio>

#include "cli/commands.hpp"

namespace graft::cli {
int cmd_info(const Args&) {
  std::fprintf(stderr, "graft: info: not implemented\n");
  return 1;
}
}  // namespace graft::cli
