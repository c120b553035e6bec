// The host's logger (spdlog). Plugins reach it only through HostServices::log.
#pragma once

#include <spdlog/spdlog.h>

#include <string_view>

#include "graft/host.hpp"

namespace graft {

// Logs go to stderr so stdout stays clean for generated text and --json output.
void init_logging(LogLevel level);
LogLevel parse_log_level(std::string_view name, bool* ok = nullptr);
spdlog::level::level_enum to_spdlog(LogLevel level);

}  // namespace graft
