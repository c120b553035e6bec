// WeightFile (graft/weight_file.hpp) over a GGUF file: tensors bound to the weight-format kernels
// of one backend, and block runners over the file's blk.N, all through the code the target's own
// forward pass runs (model_weights.cpp binds, decoder_block.cpp computes). Serves the target's
// ModelView (sharing the Model's bound lm_head and embedding) and drafters' own GGUF files.
#pragma once

#include <memory>

#include "graft/host.hpp"
#include "graft/weight_file.hpp"
#include "gguf/gguf_file.hpp"
#include "model/model_params.hpp"

namespace graft {

class Model;

class FileWeights final : public WeightFile {
 public:
  // model: the Model loaded from `file`, whose bound token_embd, output and output_norm are shared
  // rather than bound again; null for another file. host and backend outlive this object.
  FileWeights(std::shared_ptr<const gguf::File> file, std::shared_ptr<Backend> backend, const HostServices& host,
              const Model* model = nullptr);

  std::string path() const override;
  std::optional<std::int64_t> meta_int(std::string_view key) const override;
  std::optional<double> meta_real(std::string_view key) const override;
  std::optional<std::string> meta_string(std::string_view key) const override;
  std::optional<std::vector<std::int64_t>> meta_int_array(std::string_view key) const override;
  bool has_tensor(std::string_view name) const override;
  Expected<std::unique_ptr<Weight>> weight(std::string_view name) const override;
  Expected<std::unique_ptr<BlockRunner>> runner(const BlockShape& shape, std::uint32_t max_rows) const override;

 private:
  std::shared_ptr<const gguf::File> file_;
  std::shared_ptr<Backend> backend_;
  const HostServices& host_;
  const Model* model_;
};

// The parameters a block runner over a file runs a block of this shape with: the target's (its
// layer kinds) where the shape is its blocks', else a llama or qwen3 block; an inconsistent shape
// is an error naming the file. And the workspace such a runner needs.
Expected<ModelParams> runner_params(const std::string& file_name, const BlockShape& shape, const ModelParams* target);
struct WorkspaceNeeds;
WorkspaceNeeds runner_needs(const ModelParams& p);

// A tensor that is not a matrix, as a weight reads it: f32 values in the file's shape. Refused
// (not implemented): a quantized table of more than two dimensions. shape_as_table gives a view
// of its f32 values the file's shape and packed strides (its data and memory kept).
Status check_table(const std::string& file_name, std::string_view name, const gguf::TensorInfo& t);
void shape_as_table(TensorView& v, const gguf::TensorInfo& t);

// The ModelParams a DecoderBlock needs for a block of this shape.
ModelParams block_params(const BlockShape& shape);
// The shape of the model's blocks.
BlockShape block_shape(const ModelParams& p);

}  // namespace graft
