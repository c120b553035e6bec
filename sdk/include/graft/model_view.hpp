// What a drafter may see of the target model: its file (metadata, weights bound to the backend,
// its blocks, MTP nextn blocks included), its shape, the tokenizer and the backend.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graft/backend.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"
#include "graft/weight_file.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

class ModelView : public WeightFile {
 public:
  virtual std::string architecture() const = 0;  // "qwen3", "llama", ...
  virtual std::uint32_t n_vocab() const = 0;
  virtual std::uint32_t n_embd() const = 0;
  // The layers the forward pass runs; MTP (nextn) blocks are stored after them, as blk.n_layers()
  // .. blk.n_layers() + n_nextn_layers() - 1.
  virtual std::uint32_t n_layers() const = 0;
  virtual std::uint32_t n_nextn_layers() const = 0;
  virtual BlockShape block_shape() const = 0;
  // The final norm and the lm_head the forward pass uses (output.weight, or token_embd when tied).
  virtual std::string output_norm_name() const = 0;
  virtual std::string output_name() const = 0;

  virtual Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const = 0;
  virtual std::string token_text(std::int32_t id) const = 0;

  virtual Backend& backend() const = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
