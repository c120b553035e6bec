#include "speculative/drafter_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <set>
#include <tuple>

#include "engine/pipeline.hpp"
#include "model/planning_model.hpp"
#include "plugin_host/plugin_library.hpp"
#include "profile/plugin_config_check.hpp"
#include "speculative/drafter_slot.hpp"

namespace graft {

namespace {

// DrafterHost over a target that is not loaded (the contract in graft/drafter.hpp).
class PlanningDrafterHost final : public DrafterHost {
 public:
  PlanningDrafterHost(const Pipeline& p, std::shared_ptr<const gguf::File> target, const ModelParams& params,
                      Backend& backend, bool graphs, std::shared_ptr<WeightTally> tally)
      : p_(p), backend_(backend), graphs_(graphs), tally_(tally),
        target_(std::move(target), &params, backend, p.host(), graphs, tally) {}

  const ModelView& target() const override { return target_; }
  std::uint32_t context_capacity() const override { return 0; }
  Expected<std::unique_ptr<KvStore>> new_kv_store(const KvGeometry&) const override {
    return Status(Errc::unsupported, "new_kv_store while planning memory: DrafterMemory::kv says the geometry");
  }
  Expected<std::unique_ptr<WeightFile>> open_file(std::string_view path) const override {
    auto file = p_.open_gguf(path);
    if (!file) return std::move(file).status();
    return std::unique_ptr<WeightFile>(new PlanningModel(std::move(*file), nullptr, backend_, p_.host(), graphs_, tally_));
  }

 private:
  const Pipeline& p_;
  Backend& backend_;
  bool graphs_;
  std::shared_ptr<WeightTally> tally_;
  PlanningModel target_;
};

// What the verify passes keep for the drafters' taps, per sequence, as SpeculativeDecoder::start
// and the forward pass (core/model/forward.cpp) allocate it: every tap any drafter reads (and
// the final norm's output) for the largest pass, on the host where a drafter reads them there
// (counted where the host's memory is the plan's) and in backend memory where a drafter reads
// them there and the host cannot; then the decoder's rows of one call and last rows for those.
std::pair<std::uint64_t, std::string> taps_bytes(const std::vector<DrafterNeeds>& needs, bool device_apart,
                                                 std::uint64_t max_batch, std::uint64_t max_nodes, std::uint64_t E) {
  std::set<std::int32_t> taps;
  bool normed = false, wants_device = false, wants_host = false;
  std::uint64_t per_token_device = 0;
  for (const DrafterNeeds& n : needs) {
    taps.insert(n.taps.begin(), n.taps.end());
    normed = normed || n.normed_output;
    const std::uint64_t mine = n.taps.size() + (n.normed_output ? 1 : 0);
    if (mine == 0) continue;
    (n.hidden_in_backend_memory ? wants_device : wants_host) = true;
    if (n.hidden_in_backend_memory) per_token_device = std::max(per_token_device, mine);
  }
  const std::uint64_t per_row = (taps.size() + (normed ? 1 : 0)) * E * sizeof(float);
  const bool on_device = wants_device && device_apart, on_host = wants_host || (wants_device && !device_apart);
  std::uint64_t host = on_host && !device_apart ? max_batch * per_row : 0, device = 0;
  if (on_device)
    device = max_batch * per_row + (std::max(max_batch, max_nodes + 1) + needs.size()) * per_token_device * E * sizeof(float);
  if (host + device == 0) return {0, ""};
  return {host + device, fmt::format("{} hidden states of {} rows per pass{}", taps.size() + (normed ? 1 : 0), max_batch,
                                     on_device ? ", in backend memory" : "")};
}

}  // namespace

Status plan_drafters(Pipeline& pipeline, const Profile& profile, std::shared_ptr<const gguf::File> target,
                     const ModelParams& params, PlanRequest& r) {
  if (!profile.speculative.enabled) return Status::success();
  Backend& backend = pipeline.backend();
  std::vector<DrafterNeeds> needs;
  for (const PluginChoice& choice : profile.drafters) {
    auto named = [&](const Status& st) {
      return Status(st.code(), fmt::format("{}drafter '{}': {}", choice.location.empty() ? "" : choice.location + ": ",
                                           choice.name, st.message()));
    };
    auto lib = pipeline.find_plugin(PluginKind::drafter, choice.name);
    if (!lib) return Status(lib.status().code(), fmt::format("drafter '{}': {}", choice.name, lib.status().message()));
    auto factory = (*lib)->create<DrafterFactory>(pipeline.host(), normalized_plugin_config(choice, (*lib)->config_keys()));
    if (!factory) return named(factory.status());
    auto tally = std::make_shared<WeightTally>();
    PlanningDrafterHost host(pipeline, target, params, backend, r.graphs, tally);
    auto memory = catch_plugin_exceptions([&] { return (*factory)->memory(host); });
    if (!memory) {
      if (memory.status().code() != Errc::not_implemented) return named(memory.status());
      r.not_counted.push_back(fmt::format("drafter '{}' ({})", choice.name, memory.status().message()));
      continue;
    }
    if (memory->runner_blocks.size() > tally->runners.size())
      return named(Status(Errc::invalid_argument,
                          fmt::format("its memory names the blocks of {} runners but it made {}",
                                      memory->runner_blocks.size(), tally->runners.size())));
    DrafterPlan d;
    d.name = choice.name;
    (memory->shared_weights ? d.shared_weights : d.weights) = tally->weight_bytes;
    for (std::size_t i = 0; i < memory->runner_blocks.size(); ++i) {
      auto blocks = count_runner_blocks(tally->runners[i], memory->runner_blocks[i], backend, pipeline.host(), *tally);
      if (!blocks) return named(blocks.status());
      d.weights += blocks->copies;
      d.shared_weights += blocks->file;
    }
    d.buffers = tally->runner_bytes + memory->buffer_bytes;
    if (memory->kv.n_layers > 0) {
      d.kv = memory->kv;
      d.kv_extra = memory->kv_extra;
    }
    d.index_per_token = memory->host_bytes_per_token;
    r.drafters.push_back(std::move(d));
    needs.push_back(memory->needs);
  }
  std::tie(r.taps_bytes, r.taps_detail) =
      taps_bytes(needs, !backend.host_accessible(MemoryKind::device), r.max_batch,
                 static_cast<std::uint64_t>(profile.speculative.max_nodes), params.n_embd);
  return Status::success();
}

}  // namespace graft
