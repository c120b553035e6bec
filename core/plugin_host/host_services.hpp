// The host's implementation of HostServices: logging into spdlog and the loaded weight formats.
#pragma once

#include <map>
#include <memory>

#include "graft/host.hpp"
#include "graft/weight_format.hpp"

namespace graft {

class DefaultHostServices final : public HostServices {
 public:
  unsigned abi_version() const noexcept override { return kAbiVersion; }
  void log(LogLevel level, std::string_view plugin, std::string_view message) const noexcept override;
  const WeightFormat* weight_format(TypeId type) const noexcept override;

  // Registers every type id the format declares; the format must outlive this object's users.
  void add_weight_format(std::shared_ptr<WeightFormat> format);

 private:
  std::map<TypeId, std::shared_ptr<WeightFormat>> formats_;
};

}  // namespace graft
