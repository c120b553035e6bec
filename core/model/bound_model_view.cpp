// The ModelView a Model hands to plugins (drafters): metadata, weights by GGUF name, the
// tokenizer and the backend, all read from the loaded model.
#include <fmt/format.h>

#include "model/model.hpp"

namespace graft {

namespace {

class BoundModelView final : public ModelView {
 public:
  BoundModelView(const Model& m, const HostServices& host) : m_(m), host_(host) {}

  std::string architecture() const override { return m_.params().arch_name; }
  std::uint32_t n_vocab() const override { return m_.params().n_vocab; }
  std::uint32_t n_embd() const override { return m_.params().n_embd; }
  // The layers the forward pass runs (MTP blocks stored after them are not counted).
  std::uint32_t n_layers() const override { return m_.params().n_main_layers(); }

  std::optional<std::int64_t> meta_int(std::string_view key) const override { return m_.file().get_int(key); }
  std::optional<double> meta_real(std::string_view key) const override { return m_.file().get_real(key); }
  std::optional<std::string> meta_string(std::string_view key) const override { return m_.file().get_string(key); }

  // The file's bytes of the tensor (CPU: the mapping). nullopt when the file has no such tensor or
  // no loaded weight format knows its type.
  std::optional<TensorView> tensor(std::string_view name) const override {
    const gguf::TensorInfo* t = m_.file().tensor(name);
    if (!t) return std::nullopt;
    const WeightFormat* format = host_.weight_format(t->type);
    if (!format) return std::nullopt;
    for (const TypeTraits& tt : format->types())
      if (tt.id == t->type) return weight_view(*t, tt.block_bytes);
    return std::nullopt;
  }

  // Plain text: no BOS, special-token text stays text.
  Expected<std::vector<std::int32_t>> tokenize(std::string_view text) const override {
    return m_.tokenizer().encode(text, TokenizeOptions{});
  }
  std::string token_text(std::int32_t id) const override {
    if (id < 0 || static_cast<std::size_t>(id) >= m_.tokenizer().n_vocab()) return {};
    return m_.tokenizer().token_text(id);
  }

  Backend& backend() const override { return m_.backend(); }

 private:
  const Model& m_;
  const HostServices& host_;
};

}  // namespace

std::unique_ptr<ModelView> Model::bind_view(const HostServices& host) const {
  return std::make_unique<BoundModelView>(*this, host);
}

}  // namespace graft
