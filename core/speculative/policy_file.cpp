#include "speculative/policy_file.hpp"

#include "common/atomic_file.hpp"

#include <fstream>
#include <sstream>

namespace graft {

std::string read_policy_file(const std::filesystem::path& path, const nlohmann::json& identity, RoundPolicy& policy) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return "";  // the first run writes it
  std::ifstream in(path, std::ios::binary);
  if (!in) return "it cannot be read";
  std::ostringstream text;
  text << in.rdbuf();
  const nlohmann::json j = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return "it is not a JSON object";
  const nlohmann::json fits = j.value("fits", nlohmann::json());
  if (fits != identity) return "it was written for " + fits.dump() + ", not " + identity.dump();
  try {
    policy.from_json(j.at("policy"));
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

Status write_policy_file(const std::filesystem::path& path, const nlohmann::json& identity, const RoundPolicy& policy) {
  const std::string text = nlohmann::json{{"fits", identity}, {"policy", policy.to_json()}}.dump() + "\n";
  return write_file_atomically(path, std::span(reinterpret_cast<const std::uint8_t*>(text.data()), text.size()));
}

}  // namespace graft
