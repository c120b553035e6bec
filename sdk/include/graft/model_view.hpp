// What a drafter may see of the target model: metadata, weights (MTP heads and DFlash drafters
// share the target's embedding and lm_head), the tokenizer and the backend it runs on.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "graft/backend.hpp"
#include "graft/status.hpp"
#include "graft/tensor.hpp"

namespace graft {
inline namespace GRAFT_ABI_NAMESPACE {

class ModelView {
 public:
  virtual ~ModelView() = default;

  virtual std::string architecture() const = 0;  // "qwen3", "llama", ...
  virtual std::uint32_t n_vocab() const = 0;
  virtual std::uint32_t n_embd() const = 0;
  virtual std::uint32_t n_layers() const = 0;

  virtual std::optional<std::int64_t> meta_int(std::string_view key) const = 0;
  virtual std::optional<double> meta_real(std::string_view key) const = 0;
  virtual std::optional<std::string> meta_string(std::string_view key) const = 0;

  // A weight tensor by GGUF name, resident where the backend wants it; nullopt when absent.
  virtual std::optional<TensorView> tensor(std::string_view name) const = 0;

  virtual Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const = 0;
  virtual std::string token_text(std::int32_t id) const = 0;

  virtual Backend& backend() const = 0;
};

}  // namespace GRAFT_ABI_NAMESPACE
}  // namespace graft
