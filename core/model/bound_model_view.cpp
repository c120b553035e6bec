// The ModelView a Model hands to plugins (drafters): its file (metadata, weights bound to the
// backend, block runners over any blk.N, nextn blocks included), its shape, the tokenizer and the
// backend, all read from the loaded model.
#include <fmt/format.h>

#include "model/file_weights.hpp"
#include "model/model.hpp"

namespace graft {

namespace {

class BoundModelView final : public ModelView {
 public:
  BoundModelView(const Model& m, const HostServices& host)
      : m_(m), file_(m.shared_file(), m.shared_backend(), host, &m) {}

  std::string architecture() const override { return m_.params().arch_name; }
  std::uint32_t n_vocab() const override { return m_.params().n_vocab; }
  std::uint32_t n_embd() const override { return m_.params().n_embd; }
  // The layers the forward pass runs (MTP blocks stored after them are not counted).
  std::uint32_t n_layers() const override { return m_.params().n_main_layers(); }
  std::uint32_t n_nextn_layers() const override { return m_.params().n_nextn; }
  BlockShape block_shape() const override { return graft::block_shape(m_.params()); }
  std::string output_norm_name() const override { return m_.weights().output_norm.name; }
  std::string output_name() const override { return m_.weights().output.name; }

  // Plain text: no BOS, special-token text stays text.
  Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const override {
    return m_.tokenizer().encode(text, TokenizeOptions{});
  }
  std::string token_text(std::int32_t id) const override {
    if (id < 0 || static_cast<std::size_t>(id) >= m_.tokenizer().n_vocab()) return {};
    return m_.tokenizer().token_text(id);
  }
  Backend& backend() const override { return m_.backend(); }

  // The file, through FileWeights (sharing the Model's bound embedding, lm_head and final norm).
  std::string path() const override { return file_.path(); }
  std::optional<std::int64_t> meta_int(std::string_view key) const override { return file_.meta_int(key); }
  std::optional<double> meta_real(std::string_view key) const override { return file_.meta_real(key); }
  std::optional<std::string> meta_string(std::string_view key) const override { return file_.meta_string(key); }
  std::optional<std::vector<std::int64_t>> meta_int_array(std::string_view key) const override {
    return file_.meta_int_array(key);
  }
  bool has_tensor(std::string_view name) const override { return file_.has_tensor(name); }
  Expected<std::unique_ptr<Weight>> weight(std::string_view name) const override { return file_.weight(name); }
  Expected<std::unique_ptr<BlockRunner>> runner(const BlockShape& shape, std::uint32_t max_rows) const override {
    return file_.runner(shape, max_rows);
  }

 private:
  const Model& m_;
  FileWeights file_;
};

}  // namespace

std::unique_ptr<ModelView> Model::bind_view(const HostServices& host) const {
  return std::make_unique<BoundModelView>(*this, host);
}

}  // namespace graft
