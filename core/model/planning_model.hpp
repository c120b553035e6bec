// A model file as a drafter sees it while the host plans memory (DrafterFactory::memory, docs/
// memory.md): metadata, tensor names, weights with the file's shape and type but no data, and
// block runners that run nothing. Every weight() and runner() call is counted as loading would
// hold it, through the same binding code (bind_matrix, bind_layer, FormatKernels::prepared_bytes,
// Workspace::bytes_for), so the plan's drafter figures are the run's.
#pragma once

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "graft/host.hpp"
#include "graft/model_view.hpp"
#include "gguf/gguf_file.hpp"
#include "model/model_params.hpp"

namespace graft {

// What the planning files counted, in backend memory (and, where the backend computes in host
// memory, the drafter files' own bytes, which the run maps and reads).
struct WeightTally {
  std::uint64_t weight_bytes = 0;  // weights bound through weight()
  std::uint64_t runner_bytes = 0;  // block runners' workspaces
  // The runners made, in order: their file and block parameters (their blocks are counted by
  // count_runner_blocks once the drafter has said which it runs).
  struct Runner {
    std::shared_ptr<const gguf::File> file;
    bool target = false;
    ModelParams params;
  };
  std::vector<Runner> runners;
  // Drafter-file tensors whose file bytes were counted (each once).
  std::set<std::pair<const gguf::File*, std::string>> file_tensors;
};

class PlanningModel final : public ModelView {
 public:
  // target: the params of the model being planned when `file` is its file (its token_embd,
  // output and output_norm are then the Model's, counted with it); null for a drafter's file.
  PlanningModel(std::shared_ptr<const gguf::File> file, const ModelParams* target, Backend& backend,
                const HostServices& host, bool graphs, std::shared_ptr<WeightTally> tally);

  std::string architecture() const override;
  std::uint32_t n_vocab() const override;
  std::uint32_t n_embd() const override;
  std::uint32_t n_layers() const override;
  std::uint32_t n_nextn_layers() const override;
  BlockShape block_shape() const override;
  std::string output_norm_name() const override { return "output_norm.weight"; }
  std::string output_name() const override;
  Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const override;
  std::string token_text(std::int32_t) const override { return {}; }
  Backend& backend() const override { return backend_; }

  std::string path() const override { return file_->name(); }
  std::optional<std::int64_t> meta_int(std::string_view key) const override { return file_->get_int(key); }
  std::optional<double> meta_real(std::string_view key) const override { return file_->get_real(key); }
  std::optional<std::string> meta_string(std::string_view key) const override { return file_->get_string(key); }
  std::optional<std::vector<std::int64_t>> meta_int_array(std::string_view key) const override {
    return file_->get_int_array(key);
  }
  bool has_tensor(std::string_view name) const override { return file_->tensor(name) != nullptr; }
  Expected<std::unique_ptr<Weight>> weight(std::string_view name) const override;
  Expected<std::unique_ptr<BlockRunner>> runner(const BlockShape& shape, std::uint32_t max_rows) const override;

 private:
  // A tensor's file bytes, once, where they count (a drafter file on a backend that reads host memory).
  void count_file_bytes(const gguf::TensorInfo& t) const;

  std::shared_ptr<const gguf::File> file_;
  std::optional<ModelParams> target_;
  Backend& backend_;
  const HostServices& host_;
  bool graphs_;
  std::shared_ptr<WeightTally> tally_;
};

// The weights a block runner binds for `blocks` (each on first use in the run): its own copies
// (kernel layouts, vectors uploaded to a device or widened to f32), and, apart, a drafter file's
// bytes not counted yet (mapped once, whatever the number of runners).
struct RunnerBlockBytes {
  std::uint64_t copies = 0;
  std::uint64_t file = 0;
};
Expected<RunnerBlockBytes> count_runner_blocks(const WeightTally::Runner& runner, const std::vector<std::uint32_t>& blocks,
                                            Backend& backend, const HostServices& host, WeightTally& tally);

}  // namespace graft
