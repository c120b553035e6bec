#include "speculative/policy_file.hpp"

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
  std::filesystem::path tmp = path;
  tmp += ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out.flush()) return Status(Errc::io_error, "cannot write the speculative policy file " + tmp.string());
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) return Status(Errc::io_error, "cannot write the speculative policy file " + path.string() + ": " + ec.message());
  return Status::success();
}

}  // namespace graft
