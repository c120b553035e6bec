#include "plugin_host/host_services.hpp"

#include "common/log.hpp"

namespace graft {

void DefaultHostServices::log(LogLevel level, std::string_view plugin, std::string_view message) const noexcept {
  try {
    spdlog::log(to_spdlog(level), "[{}] {}", plugin, message);
  } catch (...) {
    // A failing log sink must not take a plugin call down with it.
  }
}

const WeightFormat* DefaultHostServices::weight_format(TypeId type) const noexcept {
  auto it = formats_.find(type);
  return it == formats_.end() ? nullptr : it->second.get();
}

void DefaultHostServices::add_weight_format(std::shared_ptr<WeightFormat> format) {
  for (const auto& t : format->types()) formats_[t.id] = format;
}

}  // namespace graft
