#include "engine/pipeline.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <vector>

#include "plugin_host/profile_plugins.hpp"
#include "profile/plugin_config_check.hpp"

namespace graft {

namespace {

// Touches every page of the weights once so the first tokens do not pay for page faults and
// benchmarks measure compute, not disk; reports progress as it goes. Tensors in `skip` (whose
// kernels read a copy of their own, their file pages released) are left alone.
void prefault(const gguf::File& file, const std::vector<const std::uint8_t*>& skip, const ProgressFn& progress) {
  std::vector<const gguf::TensorInfo*> tensors;
  std::uint64_t total = 0;
  for (const auto& t : file.tensors())
    if (std::find(skip.begin(), skip.end(), t.data) == skip.end()) tensors.push_back(&t), total += t.bytes;
  const std::size_t page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
  volatile std::uint8_t sink = 0;
  const std::uint64_t step = std::max<std::uint64_t>(total / 50, page);
  std::uint64_t done = 0, next_report = 0;
  for (const gguf::TensorInfo* t : tensors) {
    auto* aligned = reinterpret_cast<std::uint8_t*>(reinterpret_cast<std::uintptr_t>(t->data) & ~(page - 1));
    madvise(aligned, t->bytes + static_cast<std::size_t>(t->data - aligned), MADV_WILLNEED);
    for (std::uint64_t off = 0; off < t->bytes; off += page) sink = sink + t->data[off];
    done += t->bytes;
    if (progress && done >= next_report) {
      progress("loading weights", total ? double(done) / double(total) : 1.0);
      next_report = done + step;
    }
  }
  if (progress) progress("loading weights", 1.0);
}

}  // namespace

Pipeline::~Pipeline() = default;

MemoryReport Pipeline::memory() const {
  const KvMemory kvm = kv_->memory();
  return {model_->weights().total_bytes, kvm.device_bytes + kvm.host_bytes, model_->scratch_bytes(),
          model_->weights().prepared_bytes, model_->weights().released_bytes};
}

Expected<std::unique_ptr<Pipeline>> Pipeline::build(const Profile& profile, std::uint32_t max_batch,
                                                    const ProgressFn& progress, const TransformerOptions& model_options) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Pipeline> p(new Pipeline());
  p->profile_ = profile;
  if (profile.model.empty())
    return Status(Errc::invalid_argument, "no model: set [model] path in the profile or pass --model FILE");

  p->registry_ = std::make_unique<PluginRegistry>(registry_for(profile));
  GRAFT_TRY(check_profile_plugins(profile, *p->registry_));
  p->host_ = std::make_unique<DefaultHostServices>();
  auto formats = load_weight_formats(*p->registry_, *p->host_);
  if (!formats) return std::move(formats).status();
  p->formats_ = std::move(*formats);

  // Backend: its own keys plus the profile's thread count.
  auto backend_lib = p->registry_->find(PluginKind::backend, profile.backend.name);
  if (!backend_lib) return std::move(backend_lib).status();
  Config backend_cfg = normalized_plugin_config(profile.backend, (*backend_lib)->config_keys());
  for (const auto& k : (*backend_lib)->config_keys())
    if (std::string_view(k.key) == "threads" && !backend_cfg.has("threads")) backend_cfg.set("threads", profile.threads);
  auto backend = (*backend_lib)->create<Backend>(*p->host_, backend_cfg);
  if (!backend) return std::move(backend).status();
  p->backend_ = *backend;
  if (Status st = p->backend_->status(); !st.ok())
    return Status(st.code(), fmt::format("backend '{}' is not usable: {}", profile.backend.name, st.message()));

  auto file = gguf::File::open(profile.model, p->formats_.types);
  if (!file) return std::move(file).status();
  p->file_ = *file;
  auto tok = Tokenizer::from_gguf(*p->file_);
  if (!tok) return std::move(tok).status();
  p->tokenizer_ = std::move(*tok);
  auto model = Transformer::load(p->file_, *p->backend_, profile.backend.name, *p->host_, max_batch, model_options);
  if (!model) return std::move(model).status();
  p->model_ = std::move(*model);
  if (p->model_->params().n_vocab != p->tokenizer_->n_vocab())
    return Status(Errc::invalid_argument,
                  fmt::format("{}: the vocabulary has {} tokens but token_embd has {} rows", p->file_->name(),
                              p->tokenizer_->n_vocab(), p->model_->params().n_vocab));

  p->context_ = static_cast<std::uint32_t>(profile.context);
  // An unset context defaults to the model's training context when that is smaller; a context
  // the user chose is kept, with a warning past the training length.
  const bool context_chosen = profile.locations.count("context.size") > 0;
  if (!context_chosen) p->context_ = std::min(p->context_, p->model_->params().n_ctx_train);
  if (p->context_ > p->model_->params().n_ctx_train)
    spdlog::warn("{}: context {} exceeds the {} tokens the model was trained on; quality may drop past it",
                 profile.where("context.size"), p->context_, p->model_->params().n_ctx_train);

  auto kv_lib = p->registry_->find(PluginKind::kv_store, profile.kv.name);
  if (!kv_lib) return std::move(kv_lib).status();
  auto factory = (*kv_lib)->create<KvStoreFactory>(*p->host_, normalized_plugin_config(profile.kv, (*kv_lib)->config_keys()));
  if (!factory) return std::move(factory).status();
  p->kv_factory_ = *factory;
  auto kv = p->kv_factory_->create(*p->backend_, p->model_->kv_geometry(p->context_));
  if (!kv) return std::move(kv).status();
  p->kv_ = (*kv_lib)->adopt(std::move(*kv));

  prefault(*p->file_, p->model_->weights().released, progress);
  p->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace graft
