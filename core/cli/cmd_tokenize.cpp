#include <cstdio>

#include "cli/commands.hpp"

namespace graft::cli {
int cmd_tokenize(const Args&) {
  std::fprintf(stderr, "graft: tokenize: not implemented\n");
  return 1;
}
}  // namespace graft::cli
