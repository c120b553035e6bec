// --profile auto: the backend, KV store, K/V types and context a machine's memory allows, chosen
// by planning candidates in order (policy; the planner, memory_plan.hpp, is the mechanism).
#pragma once

#include <functional>
#include <string>

#include "engine/memory_plan.hpp"
#include "graft/status.hpp"
#include "profile/profile.hpp"

namespace graft {

// The plan of a candidate profile (Pipeline::plan): an error when it cannot be planned at all (a
// backend that is not usable here, a store it refuses).
using PlanFn = std::function<Expected<MemoryPlan>(const Profile&)>;

struct AutoChoice {
  Profile profile;  // the base with the chosen backend, [kv] and context
  std::string why;  // one line: what was chosen and why
};

// Backends in order cuda, cpu (the first that plans); KV caches in order of size, largest first:
// device f16, then on the CPU the quant store with q8_0/q8_0 and q8_0/tq3 (the only quantized
// cache the GPU has is none yet); the first whose plan holds the model's whole training context
// is taken with that context, else the one that holds the longest. A KV cache or context given on
// the command line is kept as given.
Expected<AutoChoice> choose_profile(const Profile& base, const PlanFn& plan);

}  // namespace graft
