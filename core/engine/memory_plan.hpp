// The memory a run will hold, counted before anything large is allocated, and whether it fits: the
// one place graft adds up weights, KV caches, recurrent state and workspaces (docs/memory.md).
// Pipeline::build plans, refuses what does not fit and picks `--ctx auto`'s context; `graft plan`
// prints the same plan without loading. Every figure is what the allocating code will ask for
// (the same functions compute both), so the plan matches the run's memory report (tested).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "common/byte_size.hpp"
#include "graft/status.hpp"
#include "model/model.hpp"
#include "model/model_params.hpp"
#include "profile/profile.hpp"

namespace graft {

// One drafter's memory as the planner adds it (plan_drafters, core/speculative/drafter_plan.hpp).
struct DrafterPlan {
  std::string name;
  std::uint64_t shared_weights = 0;  // bound once for every sequence (a drafter file's weights)
  std::uint64_t weights = 0;         // per sequence: weights it binds itself, its runners' blocks
  std::uint64_t buffers = 0;         // per sequence: its buffers and its runners' workspaces
  KvGeometry kv{};                   // per sequence: its KV cache in the profile's store (n_layers
  std::uint32_t kv_extra = 0;        // 0: none), of the context + kv_extra slots
  std::uint64_t index_per_token = 0; // per sequence: host memory per token of context, at most
};

struct PlanRequest {
  WeightsPlan weights;            // Model::plan_weights
  ModelParams params;
  const KvStoreFactory* kv = nullptr;  // the profile's KV store
  Backend* backend = nullptr;          // the backend its stores are planned for (KvStoreFactory::plan)
  std::string kv_label;           // "device f16", "quant q8_0/tq3"
  std::uint32_t context = 0;      // tokens per sequence; 0: the largest that fits (auto)
  std::uint32_t context_limit = 0;  // the most `auto` picks (the model's training context)
  std::uint32_t parallel = 1;     // sequences, each of the whole context (graft serve --parallel)
  bool shared_workspace = false;  // one workspace for all sequences (the server), else one each
  std::uint32_t max_batch = 1;    // rows per forward pass: the workspace's size
  bool graphs = false;            // the backend captures graphs (its workspaces add pinned outputs)
  std::uint32_t max_tree_rows = 1;      // a hybrid model's kept tree rows (SessionOptions)
  std::uint32_t state_checkpoints = 0;  // and its recurrent state's checkpoints, at most
  std::uint64_t budget = 0;       // bytes available; 0: unknown (nothing is refused)
  std::string budget_source;      // "cpu: ... (system RAM)", "--memory 16GiB"
  // System RAM for what a store keeps there beside the backend's memory (an offload); 0: unknown.
  std::uint64_t host_budget = 0;
  std::vector<DrafterPlan> drafters;     // each sequence's drafters (speculative decoding)
  std::uint64_t taps_bytes = 0;          // per sequence: the verify passes' taps kept for them
  std::string taps_detail;
  std::vector<std::string> not_counted;  // what the plan leaves out, said with it
};

struct PlanItem {
  std::string what;    // "weights", "KV cache", ...
  std::uint64_t bytes = 0;
  std::string detail;  // how the figure is made up
  bool host = false;   // in system RAM beside the backend's memory (an offloading KV store)
};

struct MemoryPlan {
  std::vector<PlanItem> items;
  std::uint64_t total = 0;       // the items in the backend's memory (on the CPU: all of them)
  std::uint64_t host_total = 0;  // the items in system RAM beside it (PlanItem::host)
  std::uint64_t budget = 0;
  std::uint64_t host_budget = 0;
  std::string budget_source;
  std::uint32_t context = 0;
  bool context_auto = false;     // chosen by the planner
  std::uint32_t context_limit = 0;  // the most an auto context may be (the training context)
  std::string choice;            // --profile auto: what was chosen and why
  std::string kv;                // the KV cache planned ("device f16", "quant q8_0/tq3")
  std::string note;              // said first: a plan made without the backend's device
  std::uint32_t parallel = 1;
  std::uint64_t kv_per_token = 0;  // one sequence's KV bytes per token (the drafters' KV not included)
  std::vector<std::string> not_counted;
  std::vector<std::string> advice;  // what to change when it does not fit

  bool fits() const { return (budget == 0 || total <= budget) && (host_budget == 0 || host_total <= host_budget); }
  // The items as an aligned table with the total, the budget and the verdict, then the advice.
  std::string table() const;
  // One line: "weights 8.1 MiB + KV cache 1.0 MiB + ... = 13.0 MiB of 23.4 GiB (cpu ...)", after
  // what --profile auto chose, if it did.
  std::string summary() const;
  // "weights 8.1 MiB + KV cache 1.0 MiB + workspace 3.9 MiB" (items of 0 bytes, and those in
  // system RAM, left out: they add up to total).
  std::string items_text() const;
  const PlanItem* item(std::string_view what) const;
};

// The plan for r. An auto context is the largest multiple of 256 (or, below 256, of 16) up to
// context_limit that fits; none fitting is an error naming what the fixed items take.
Expected<MemoryPlan> plan_memory(const PlanRequest& r);

// The KV cache a profile asks for, in a few words: "device f16", "quant q8_0/q4_0" (K/V types,
// defaults filled in), another store's name alone.
std::string kv_label(const PluginChoice& kv);


}  // namespace graft
