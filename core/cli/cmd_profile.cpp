#include <cstdio>

#include "cli/commands.hpp"

namespace graft::cli {
int cmd_profile(const Args&) {
  std::fprintf(stderr, "graft: profile: not implemented\n");
  return 1;
}
}  // namespace graft::cli
