// The drafters' memory in the plan, before anything is loaded: each drafter factory's memory()
// against a host that describes the unloaded target (core/model/planning_model.hpp), the
// weights and runners it asks for counted by the binding code the run uses, its KV cache sized
// by the profile's store. docs/memory.md.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/memory_plan.hpp"
#include "gguf/gguf_file.hpp"
#include "graft/kv_store.hpp"
#include "model/model_params.hpp"
#include "profile/profile.hpp"

namespace graft {

class Pipeline;

// r.drafters: one DrafterPlan per drafter of `profile` that reports its memory; the others are
// named in r.not_counted. Nothing when the profile does not speculate. A drafter whose memory() fails for a
// reason other than not reporting (mtp on a file without nextn blocks, a missing drafter file)
// fails the plan with its message, as creating it would fail the run. pipeline: its plugins,
// backend and files (Pipeline::open's, before the model is loaded). Their KV caches are planned
// by the planner with r.kv, the profile's store, which makes them.
// The taps' buffers go to r.taps_bytes: what the verify passes keep for the drafters, per
// sequence (SpeculativeDecoder::start and the forward pass allocate them).
Status plan_drafters(Pipeline& pipeline, const Profile& profile, std::shared_ptr<const gguf::File> target,
                     const ModelParams& params, PlanRequest& r);

}  // namespace graft
