// A ModelView and DrafterHost for drafter tests: one token per byte, no weights, no backend.
#pragma once

#include <cstdlib>

#include "graft/graft.hpp"

class ByteModel final : public graft::ModelView {
 public:
  std::string architecture() const override { return "bytes"; }
  std::uint32_t n_vocab() const override { return 256; }
  std::uint32_t n_embd() const override { return 0; }
  std::uint32_t n_layers() const override { return 0; }
  std::uint32_t n_nextn_layers() const override { return 0; }
  graft::BlockShape block_shape() const override { return {}; }
  std::string output_norm_name() const override { return {}; }
  std::string output_name() const override { return {}; }
  graft::Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const override {
    return std::vector<std::int32_t>(text.begin(), text.end());
  }
  std::string token_text(std::int32_t id) const override { return std::string(1, static_cast<char>(id)); }
  graft::Backend& backend() const override { std::abort(); }  // drafters under test never ask

  std::string path() const override { return "bytes"; }
  std::optional<std::int64_t> meta_int(std::string_view) const override { return std::nullopt; }
  std::optional<double> meta_real(std::string_view) const override { return std::nullopt; }
  std::optional<std::string> meta_string(std::string_view) const override { return std::nullopt; }
  std::optional<std::vector<std::int64_t>> meta_int_array(std::string_view) const override { return std::nullopt; }
  bool has_tensor(std::string_view) const override { return false; }
  graft::Expected<std::unique_ptr<graft::Weight>> weight(std::string_view name) const override {
    return graft::Status(graft::Errc::not_found, "bytes: no tensor '" + std::string(name) + "'");
  }
  graft::Expected<std::unique_ptr<graft::BlockRunner>> runner(const graft::BlockShape&, std::uint32_t) const override {
    return graft::not_implemented("bytes: block runner");
  }
};

class ByteHost final : public graft::DrafterHost {
 public:
  const graft::ModelView& target() const override { return model_; }
  std::uint32_t context_capacity() const override { return 4096; }
  graft::Expected<std::unique_ptr<graft::KvStore>> new_kv_store(const graft::KvGeometry&) const override {
    return graft::not_implemented("bytes: KV store");
  }
  graft::Expected<std::unique_ptr<graft::WeightFile>> open_file(std::string_view path) const override {
    return graft::Status(graft::Errc::not_found, std::string(path) + ": bytes host opens no files");
  }

 private:
  ByteModel model_;
};
