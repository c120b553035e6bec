#include "common/log.hpp"

#include <spdlog/sinks/stdout_color_sinks.h>

namespace graft {

spdlog::level::level_enum to_spdlog(LogLevel level) {
  switch (level) {
    case LogLevel::trace: return spdlog::level::trace;
    case LogLevel::debug: return spdlog::level::debug;
    case LogLevel::info: return spdlog::level::info;
    case LogLevel::warn: return spdlog::level::warn;
    case LogLevel::error: return spdlog::level::err;
  }
  return spdlog::level::info;
}

LogLevel parse_log_level(std::string_view name, bool* ok) {
  if (ok) *ok = true;
  if (name == "trace") return LogLevel::trace;
  if (name == "debug") return LogLevel::debug;
  if (name == "info") return LogLevel::info;
  if (name == "warn" || name == "warning") return LogLevel::warn;
  if (name == "error") return LogLevel::error;
  if (ok) *ok = false;
  return LogLevel::info;
}

void init_logging(LogLevel level) {
  auto logger = spdlog::stderr_color_mt("graft");
  logger->set_pattern("%^%l%$: %v");
  logger->set_level(to_spdlog(level));
  spdlog::set_default_logger(logger);
}

}  // namespace graft
