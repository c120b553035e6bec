#include "engine/pipeline.hpp"

#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <thread>
#include <vector>

#include "common/human_bytes.hpp"
#include "engine/auto_profile.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "plugin_host/profile_plugins.hpp"
#include "plugin_host/weight_formats.hpp"
#include "profile/plugin_config_check.hpp"
#include "speculative/drafter_plan.hpp"

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

// A hybrid model's state keeps the rows of the largest verify pass the profile's drafters make.
std::uint32_t tree_rows(const Profile& profile, std::uint32_t max_batch) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(profile.speculative.max_nodes + 1, 1, std::int64_t{max_batch}));
}

}  // namespace

// The plugin side of a pipeline, shared with its Model: prepared weights are memory of the
// weight-format plugins, so their libraries stay loaded while any Model or Session lives.
struct LoadedPlugins {
  std::unique_ptr<PluginRegistry> registry;
  std::unique_ptr<DefaultHostServices> host;
  WeightFormats formats;
};

Pipeline::~Pipeline() = default;

MemoryReport Pipeline::memory(Session& session) const {
  const KvMemory kvm = session.kv().memory();
  return {model_->weights().total_bytes, kvm.device_bytes + kvm.host_bytes, session.state_bytes(),
          session.workspace().bytes(), model_->weights().prepared_bytes, model_->weights().released_bytes};
}

Expected<std::unique_ptr<Session>> Pipeline::new_session(std::shared_ptr<Workspace> workspace) const {
  auto kv = kv_factory_->create(*backend_, model_->kv_geometry(context_));
  if (!kv) return std::move(kv).status();
  SessionOptions options;
  options.max_batch = max_batch_;
  options.max_tree_rows = tree_rows(profile_, max_batch_);
  options.capacity_source = fmt::format("[context] size ({}) or --ctx", profile_.where("context.size"));
  return Session::create(model_, kv_library_->adopt(std::move(*kv)), options, std::move(workspace));
}

const HostServices& Pipeline::host() const { return *plugins_->host; }

Expected<std::shared_ptr<KvStore>> Pipeline::new_kv_store(const KvGeometry& geometry) const {
  auto kv = kv_factory_->create(*backend_, geometry);
  if (!kv) return std::move(kv).status();
  return kv_library_->adopt(std::move(*kv));
}

Expected<std::shared_ptr<PluginLibrary>> Pipeline::find_plugin(PluginKind kind, std::string_view name) const {
  return plugins_->registry->find(kind, name);
}

Expected<std::shared_ptr<const gguf::File>> Pipeline::open_gguf(std::string_view path) const {
  // As given: a profile's [[drafter]] model path was resolved against the profile when it was
  // read, and a command-line one is relative to the working directory, like --model.
  return gguf::File::open(std::filesystem::path(path), plugins_->formats.types);
}

namespace {

// A KV store's error with where it points in the profile: the first of its keys the message names
// ("type_v = ...", "host_budget ..."), else its table.
Status kv_located(const Profile& profile, const Status& st) {
  const std::string& m = st.message();
  std::string at = profile.kv.location.empty() ? profile.where("kv.store") : profile.kv.location;
  for (const auto& [key, where] : profile.kv.key_locations)
    if (m.rfind(key + " ", 0) == 0 || m.find(": " + key + " ") != std::string::npos) {
      at = where;
      break;
    }
  return Status(st.code(), at + ": " + m);
}

// System RAM (MemTotal), the budget of what an offloading store keeps in host memory; 0 unknown.
std::uint64_t system_memory_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemTotal:") return kib * 1024;
  return 0;
}

// Threads beyond the machine's hardware threads only make the pool's workers wait on each other.
std::int64_t clamp_threads(const Profile& profile, std::int64_t threads) {
  const unsigned hw = std::thread::hardware_concurrency();
  if (hw > 0 && threads > static_cast<std::int64_t>(hw)) {
    spdlog::warn("{}: {} threads on a machine with {} hardware threads would oversubscribe it; using {}",
                 profile.where("backend.threads"), threads, hw, hw);
    return hw;
  }
  return threads;
}

}  // namespace

Status Pipeline::open(const Profile& profile, std::uint32_t max_batch, const MemoryOptions& memory,
                      const ModelOptions& model_options, Pipeline& pipeline, std::shared_ptr<const gguf::File>& file_out) {
  if (profile.auto_choice) {  // --profile auto: plan the candidates, then open the one chosen
    MemoryOptions here = memory;  // a backend that cannot run here is no candidate
    here.without_device = false;
    auto chosen = choose_profile(profile, [&](const Profile& candidate) -> Expected<MemoryPlan> {
      Pipeline scratch;
      std::shared_ptr<const gguf::File> file;
      GRAFT_TRY(open(candidate, max_batch, here, model_options, scratch, file));
      return scratch.plan_;
    });
    if (!chosen) return chosen.status();
    GRAFT_TRY(open(chosen->profile, max_batch, memory, model_options, pipeline, file_out));
    pipeline.plan_.choice = chosen->why;
    return Status::success();
  }
  Pipeline* p = &pipeline;
  p->profile_ = profile;
  if (profile.model.empty())
    return Status(Errc::invalid_argument, "no model: set [model] path in the profile or pass --model FILE");
  if (max_batch == 0) return Status(Errc::invalid_argument, "pipeline: max_batch must be at least 1");
  p->max_batch_ = max_batch;

  auto plugins = std::make_shared<LoadedPlugins>();
  plugins->registry = std::make_unique<PluginRegistry>(registry_for(profile));
  GRAFT_TRY(check_profile_plugins(profile, *plugins->registry));
  plugins->host = std::make_unique<DefaultHostServices>();
  auto formats = load_weight_formats(*plugins->registry, *plugins->host);
  if (!formats) return std::move(formats).status();
  plugins->formats = std::move(*formats);
  p->plugins_ = plugins;

  // Backend: its own keys plus the profile's thread count.
  auto backend_lib = plugins->registry->find(PluginKind::backend, profile.backend.name);
  if (!backend_lib) return std::move(backend_lib).status();
  Config backend_cfg = normalized_plugin_config(profile.backend, (*backend_lib)->config_keys());
  for (const auto& k : (*backend_lib)->config_keys())
    if (std::string_view(k.key) == "threads" && !backend_cfg.has("threads")) backend_cfg.set("threads", profile.threads);
  if (auto threads = backend_cfg.get_int("threads")) backend_cfg.set("threads", clamp_threads(profile, *threads));
  auto backend = (*backend_lib)->create<Backend>(*plugins->host, backend_cfg);
  if (!backend) return std::move(backend).status();
  p->backend_ = *backend;
  std::string unusable;  // why the backend cannot run here, when planning without its device
  if (Status st = p->backend_->status(); !st.ok()) {
    if (!memory.without_device || memory.budget == 0)
      return Status(st.code(), fmt::format("backend '{}' is not usable: {}", profile.backend.name, st.message()));
    unusable = fmt::format("backend '{}' cannot run on this machine ({}): planned for {} without it",
                           profile.backend.name, st.message(), memory.budget_source);
  }
  // The backend's kernel libraries: its kernels for formats and stores whose plugins have none there.
  if (auto libs = load_kernel_libraries(*plugins->registry, *plugins->host, p->backend_->name()); !libs)
    return std::move(libs).status();

  auto file = gguf::File::open(profile.model, plugins->formats.types);
  if (!file) return std::move(file).status();
  file_out = *file;
  auto params = ModelParams::from_gguf(**file);
  if (!params) return std::move(params).status();
  auto kv_lib = plugins->registry->find(PluginKind::kv_store, profile.kv.name);
  if (!kv_lib) return std::move(kv_lib).status();
  auto factory = (*kv_lib)->create<KvStoreFactory>(*plugins->host, normalized_plugin_config(profile.kv, (*kv_lib)->config_keys()));
  if (!factory) return kv_located(profile, factory.status());
  p->kv_factory_ = *factory;
  p->kv_library_ = *kv_lib;

  // The memory plan, before anything large is allocated: what the weights will hold as loaded, the
  // KV cache and state of every sequence, the workspaces.
  auto weights = Model::plan_weights(**file, *plugins->host, *p->backend_, model_options);
  if (!weights) return std::move(weights).status();
  PlanRequest r;
  r.weights = *weights;
  r.params = *params;
  r.kv = p->kv_factory_.get();
  r.backend = p->backend_.get();
  r.kv_label = kv_label(profile.kv);
  r.parallel = memory.parallel;
  r.shared_workspace = memory.shared_workspace;
  r.max_batch = max_batch;
  r.graphs = p->backend_->graphs_supported();
  r.max_tree_rows = tree_rows(profile, max_batch);
  r.state_checkpoints = SessionOptions{}.state_checkpoints;
  // An unset context defaults to the model's training context when that is smaller; a context
  // the user chose is kept, with a warning past the training length; "auto" (0) is the largest
  // that fits, up to the training length.
  r.context_limit = params->n_ctx_train;
  r.context = static_cast<std::uint32_t>(profile.context);
  const bool context_chosen = profile.locations.count("context.size") > 0;
  if (r.context && !context_chosen) r.context = std::min(r.context, params->n_ctx_train);
  if (r.context > params->n_ctx_train)
    spdlog::warn("{}: context {} exceeds the {} tokens the model was trained on; quality may drop past it",
                 profile.where("context.size"), r.context, params->n_ctx_train);
  const auto devices = p->backend_->devices();
  if (memory.budget > 0) {
    r.budget = memory.budget;
    r.budget_source = memory.budget_source;
  } else if (!devices.empty() && devices[0].total_memory > 0) {
    r.budget = devices[0].total_memory;
    r.budget_source = devices[0].name;
  } else {
    r.budget_source = "backend '" + profile.backend.name + "' reports no memory size";
  }
  // A store that refuses this backend or the model's heads says so first, pointing at its table.
  if (auto refused = p->kv_factory_->plan(*p->backend_, params->kv_geometry(1)); !refused)
    return kv_located(profile, refused.status());
  r.host_budget = memory.without_device ? 0 : system_memory_bytes();
  GRAFT_TRY(plan_drafters(*p, profile, *file, *params, r));
  auto plan = plan_memory(r);
  if (!plan)
    return Status(plan.status().code(), fmt::format("{}: {}", profile.where("context.size"), plan.status().message()));
  p->plan_ = std::move(*plan);
  p->plan_.note = unusable;
  p->context_ = p->plan_.context;
  p->kv_bytes_ = p->plan_.kv_per_token * p->context_;
  return Status::success();
}

Expected<MemoryPlan> Pipeline::plan(const Profile& profile, std::uint32_t max_batch, const MemoryOptions& memory,
                                    const ModelOptions& model_options) {
  Pipeline p;
  std::shared_ptr<const gguf::File> file;
  GRAFT_TRY(open(profile, max_batch, memory, model_options, p, file));
  return p.plan_;
}

Expected<std::unique_ptr<Pipeline>> Pipeline::build(const Profile& profile, std::uint32_t max_batch,
                                                    const ProgressFn& progress, const ModelOptions& model_options,
                                                    const MemoryOptions& memory) {
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Pipeline> p(new Pipeline());
  std::shared_ptr<const gguf::File> file;
  GRAFT_TRY(open(profile, max_batch, memory, model_options, *p, file));
  if (Status st = p->backend_->status(); !st.ok())  // planned without its device: never run so
    return Status(st.code(), fmt::format("backend '{}' is not usable: {}", p->profile_.backend.name, st.message()));
  const MemoryPlan& plan = p->plan_;
  if (!plan.fits()) {
    return Status(Errc::out_of_memory,
                  fmt::format("{}: the run needs {} ({}) but {} has {}: {}; graft plan shows the whole plan",
                              profile.where("context.size"), human_bytes(plan.total), plan.items_text(),
                              plan.budget_source, human_bytes(plan.budget), plan.advice.front()));
  }
  const auto devices = p->backend_->devices();
  if (!devices.empty() && devices[0].free_memory > 0 && plan.total > devices[0].free_memory)
    spdlog::warn("{}: the run plans {} but {} is free now; the system may swap", profile.where("context.size"),
                 human_bytes(plan.total), human_bytes(devices[0].free_memory));

  auto model = Model::load(file, p->backend_, *p->plugins_->host, p->plugins_, model_options);
  if (!model) return std::move(model).status();
  p->model_ = std::move(*model);

  prefault(p->model_->file(), p->model_->weights().released, progress);
  p->load_seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return p;
}

}  // namespace graft
