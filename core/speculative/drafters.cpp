#include "speculative/drafters.hpp"

#include <fmt/format.h>

#include "model/file_weights.hpp"
#include "plugin_host/plugin_library.hpp"
#include "profile/plugin_config_check.hpp"

namespace graft {

// DrafterHost over a pipeline: the target's view, stores of the profile's KV plugin, and drafter
// GGUFs opened and bound like the model.
class PipelineDrafterHost final : public DrafterHost {
 public:
  explicit PipelineDrafterHost(const Pipeline& p) : p_(p) {}

  const ModelView& target() const override { return p_.model().view(); }
  std::uint32_t context_capacity() const override { return p_.context(); }

  Expected<std::unique_ptr<KvStore>> new_kv_store(const KvGeometry& geometry) const override {
    auto store = p_.new_kv_store(geometry);
    if (!store) return std::move(store).status();
    // The plugin owns the object through a unique_ptr; the shared one (which keeps the KV
    // library loaded) rides along inside a forwarding store.
    return std::unique_ptr<KvStore>(new Holder(std::move(*store)));
  }

  Expected<std::unique_ptr<WeightFile>> open_file(std::string_view path) const override {
    auto file = p_.open_gguf(path);
    if (!file) return std::move(file).status();
    return std::unique_ptr<WeightFile>(
        new FileWeights(std::move(*file), p_.model().shared_backend(), p_.host(), nullptr));
  }

 private:
  // Forwards every call to a store held by shared_ptr.
  class Holder final : public KvStore {
   public:
    explicit Holder(std::shared_ptr<KvStore> s) : s_(std::move(s)) {}
    KvGeometry geometry() const noexcept override { return s_->geometry(); }
    std::uint32_t size() const noexcept override { return s_->size(); }
    bool lossless() const noexcept override { return s_->lossless(); }
    KvMemory memory() const noexcept override { return s_->memory(); }
    Status write(std::uint32_t layer, std::uint32_t slot, std::uint32_t n, const TensorView& k,
                 const TensorView& v) override {
      return s_->write(layer, slot, n, k, v);
    }
    Status attend(std::uint32_t layer, const TensorView& q, const AttentionBatch& batch, const TensorView& out) override {
      return s_->attend(layer, q, batch, out);
    }
    Status truncate(std::uint32_t n) override { return s_->truncate(n); }
    Status compact(std::uint32_t dst, std::span<const std::uint32_t> src) override { return s_->compact(dst, src); }

   private:
    std::shared_ptr<KvStore> s_;
  };

  const Pipeline& p_;
};

std::unique_ptr<DrafterHost> drafter_host(const Pipeline& pipeline) {
  return std::make_unique<PipelineDrafterHost>(pipeline);
}

Drafters::~Drafters() = default;

Expected<std::unique_ptr<Drafters>> Drafters::load(const Pipeline& pipeline) {
  return load(pipeline, pipeline.profile().drafters, pipeline.profile().speculative);
}

Expected<std::unique_ptr<Drafters>> Drafters::load(const Pipeline& pipeline, std::vector<PluginChoice> drafters,
                                                   const SpeculativeSettings& settings) {
  Profile profile = pipeline.profile();  // for where() in messages
  profile.drafters = std::move(drafters);
  profile.speculative = settings;
  if (!profile.speculative.enabled) return std::unique_ptr<Drafters>();
  if (profile.drafters.empty())
    return Status(Errc::invalid_argument, fmt::format("{}: speculative decoding needs at least one drafter",
                                                      profile.where("speculative.enabled")));
  std::unique_ptr<Drafters> d(new Drafters());
  d->options_.max_nodes = static_cast<std::uint32_t>(profile.speculative.max_nodes);
  d->options_.max_depth = static_cast<std::uint32_t>(profile.speculative.max_depth);
  d->options_.adaptive = profile.speculative.adaptive;
  d->options_.draft_length = static_cast<std::uint32_t>(profile.speculative.draft_length);
  if (!profile.speculative.policy_file.empty()) {
    // The file fits one model, its drafters (by name, in order) and the round's budget.
    d->policy_file_ = profile.speculative.policy_file;
    nlohmann::json names = nlohmann::json::array();
    for (const PluginChoice& c : profile.drafters) names.push_back(c.name);
    d->policy_identity_ = {{"model", pipeline.profile().model.filename().string()},
                           {"model_bytes", pipeline.file().file_size()},
                           {"drafters", names},
                           {"max_nodes", profile.speculative.max_nodes},
                           {"max_depth", profile.speculative.max_depth}};
  }
  d->n_vocab_ = pipeline.model().params().n_vocab;
  d->n_layers_ = pipeline.model().params().n_main_layers();
  // A verify pass is one forward pass: the pending token and every node in one batch.
  if (d->options_.max_nodes + 1 > pipeline.max_batch())
    return Status(Errc::invalid_argument,
                  fmt::format("{}: speculative.max_nodes = {} needs verify passes of {} rows, but a forward pass "
                              "holds {} (--batch): lower max_nodes or raise --batch",
                              profile.where("speculative.max_nodes"), d->options_.max_nodes, d->options_.max_nodes + 1,
                              pipeline.max_batch()));
  if (profile.drafters.size() > 64)
    return Status(Errc::invalid_argument, "more than 64 drafters in one round are not supported");
  d->host_ = std::make_shared<PipelineDrafterHost>(pipeline);
  for (const PluginChoice& choice : profile.drafters) {
    for (const Entry& e : d->entries_)
      if (e.name == choice.name)
        return Status(Errc::invalid_argument,
                      fmt::format("{}: drafter '{}' is listed twice", choice.location.empty() ? "command line" : choice.location,
                                  choice.name));
    auto lib = pipeline.find_plugin(PluginKind::drafter, choice.name);
    if (!lib) return Status(lib.status().code(), fmt::format("drafter '{}': {}", choice.name, lib.status().message()));
    auto factory = (*lib)->create<DrafterFactory>(pipeline.host(), normalized_plugin_config(choice, (*lib)->config_keys()));
    if (!factory)
      return Status(factory.status().code(), fmt::format("{}drafter '{}': {}",
                                                         choice.location.empty() ? "" : choice.location + ": ",
                                                         choice.name, factory.status().message()));
    d->entries_.push_back(Entry{choice.name, std::move(*factory), *lib});
  }
  return d;
}

Expected<std::unique_ptr<SpeculativeDecoder>> Drafters::new_decoder() const {
  std::vector<DrafterSlot> slots;
  for (const Entry& e : entries_) {
    auto made = catch_plugin_exceptions([&] { return e.factory->create(*host_); });
    if (!made) return Status(made.status().code(), fmt::format("drafter '{}': {}", e.name, made.status().message()));
    slots.emplace_back(e.name, e.library->adopt(std::move(*made)), n_vocab_);
    // Taps the forward pass cannot give would fail every verify pass: refuse them now.
    for (std::int32_t tap : slots.back().needs().taps)
      if (tap < 0 || static_cast<std::uint32_t>(tap) > n_layers_)
        return Status(Errc::out_of_range,
                      fmt::format("drafter '{}' asks for hidden-state tap {}, but the model has taps 0..{} (layer inputs, "
                                  "then the output)", e.name, tap, n_layers_));
  }
  // The drafters' makers stay alive with them (a drafter may keep a reference to its host).
  auto owners = std::make_shared<std::pair<std::vector<Entry>, std::shared_ptr<PipelineDrafterHost>>>(entries_, host_);
  auto decoder = std::make_unique<SpeculativeDecoder>(std::move(slots), options_, std::move(owners));
  if (!policy_file_.empty()) decoder->use_policy_file(policy_file_, policy_identity_);
  return decoder;
}

}  // namespace graft
