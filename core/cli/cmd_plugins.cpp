#include <cstdio>
#include "cli/commands.hpp"
namespace graft::cli {
int cmd_plugins(const Args&) { std::fprintf(stderr, "graft plugins: pending\n"); return 1; }
}
