// A ModelView for drafter tests: one token per byte, no weights, no backend.
#pragma once

#include <cstdlib>

#include "graft/graft.hpp"

class ByteModel final : public graft::ModelView {
 public:
  std::string architecture() const override { return "bytes"; }
  std::uint32_t n_vocab() const override { return 256; }
  std::uint32_t n_embd() const override { return 0; }
  std::uint32_t n_layers() const override { return 0; }
  std::optional<std::int64_t> meta_int(std::string_view) const override { return std::nullopt; }
  std::optional<double> meta_real(std::string_view) const override { return std::nullopt; }
  std::optional<std::string> meta_string(std::string_view) const override { return std::nullopt; }
  std::optional<graft::TensorView> tensor(std::string_view) const override { return std::nullopt; }
  graft::Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const override {
    return std::vector<std::int32_t>(text.begin(), text.end());
  }
  std::string token_text(std::int32_t id) const override { return std::string(1, static_cast<char>(id)); }
  graft::Backend& backend() const override { std::abort(); }  // drafters under test never ask
};
