// The opt-in file that keeps a round policy across runs (`[speculative] policy_file`,
// `--spec-policy`; docs/speculative.md): {"fits": identity, "policy": RoundPolicy::to_json()}.
// The identity names what the policy was learnt for (the model, the drafters, the budget); a file
// for anything else is not used. It is a cache of measurements: the output never depends on it.
#pragma once

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "graft/status.hpp"
#include "speculative/round_policy.hpp"

namespace graft {

// Loads `path` into `policy` when it exists and fits `identity`. Returns why it was not used ("" when
// it was, or when there is no file yet); `policy` is then unchanged.
std::string read_policy_file(const std::filesystem::path& path, const nlohmann::json& identity, RoundPolicy& policy);
// Writes the policy there atomically (common/atomic_file.hpp).
Status write_policy_file(const std::filesystem::path& path, const nlohmann::json& identity, const RoundPolicy& policy);

}  // namespace graft
