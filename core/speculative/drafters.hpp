// The drafters a profile asks for ([speculative] enabled with [[drafter]] tables, or --draft):
// their plugins loaded and factories made once per pipeline, and for each session a
// SpeculativeDecoder with drafters of its own. Destroy decoders before the pipeline.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "engine/pipeline.hpp"
#include "graft/drafter.hpp"
#include "speculative/speculative_decoder.hpp"

namespace graft {

class PipelineDrafterHost;

// What a drafter sees of a pipeline (DrafterHost): its target, KV stores of the profile's plugin,
// drafter GGUFs opened like the model. Lives no longer than the pipeline.
std::unique_ptr<DrafterHost> drafter_host(const Pipeline& pipeline);

class Drafters {
 public:
  // Null when the profile does not speculate. Errors are one line: a drafter plugin missing or
  // failing, the same drafter twice, max_nodes beyond the batch size of a verify pass.
  static Expected<std::unique_ptr<Drafters>> load(const Pipeline& pipeline);
  // The same for drafter tables and settings given here instead of the pipeline's profile.
  static Expected<std::unique_ptr<Drafters>> load(const Pipeline& pipeline, std::vector<PluginChoice> drafters,
                                                  const SpeculativeSettings& settings);
  ~Drafters();

  // Drafters for one sequence (each factory's create(); a failure names the drafter: mtp on a
  // file without nextn blocks, a tap the model cannot give). Callers make the first before the
  // first token, so such errors come before any output. The decoder keeps the factories and the
  // host alive, so it may outlive this object (not the pipeline).
  Expected<std::unique_ptr<SpeculativeDecoder>> new_decoder() const;

 private:
  Drafters() = default;
  struct Entry {
    std::string name;
    std::shared_ptr<DrafterFactory> factory;
    std::shared_ptr<PluginLibrary> library;
  };
  std::vector<Entry> entries_;
  std::shared_ptr<PipelineDrafterHost> host_;
  SpeculativeOptions options_;
  std::filesystem::path policy_file_;
  nlohmann::json policy_identity_;
  std::uint32_t n_vocab_ = 0;
  std::uint32_t n_layers_ = 0;
};

}  // namespace graft
