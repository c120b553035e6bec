// Everything a profile asks for, loaded and wired: plugins (ABI and keys checked), backend,
// weight formats, the Model (weights, tokenizer) and the KV-store plugin. Sessions (sequences)
// are made from it, each with a KV store sized for the context; the Model is shared by all.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "engine/memory_plan.hpp"
#include "engine/session.hpp"
#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "graft/plugin.hpp"
#include "gguf/gguf_file.hpp"
#include "model/model.hpp"
#include "profile/profile.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft {

struct MemoryReport {
  std::uint64_t weights = 0;  // mapped model bytes the forward pass reads
  std::uint64_t kv = 0;       // KV store (device + host)
  std::uint64_t state = 0;    // a hybrid model's recurrent state, its kept tree rows and checkpoints
  std::uint64_t scratch = 0;  // activations
  std::uint64_t prepared = 0; // weight copies made at load: kernel layouts (FormatKernels::prepare), stacked q/k/v, gate/up
  std::uint64_t released = 0; // of `weights`, file pages dropped once those copies were made
};

// What the memory plan counts beyond the profile, and the memory it may use.
struct MemoryOptions {
  std::uint32_t parallel = 1;     // sequences, each of the whole context (graft serve --parallel)
  bool shared_workspace = false;  // they share one workspace (the server's one queue thread)
  std::uint64_t budget = 0;       // bytes available; 0: the backend's device memory
  std::string budget_source;      // where budget came from ("--memory 16GiB")
  // graft plan --memory: plan for a backend that cannot run on this machine (a GPU profile on a
  // machine without one); nothing touches the device: the weights' copies, the KV cache and the
  // workspaces are sized from the files and the plugins' declarations. Never for a run.
  bool without_device = false;
};

// Progress of a long step: fraction done in [0, 1].
using ProgressFn = std::function<void(std::string_view what, double fraction)>;

struct LoadedPlugins;
class PluginLibrary;

class Pipeline {
 public:
  // Fails with one line naming the cause (profile location, plugin file, model file, tensor), or,
  // before anything large is allocated, with the memory plan when it does not fit. max_batch:
  // rows per forward pass of its sessions. A profile's context.size = "auto" (0) becomes the
  // largest context that fits.
  static Expected<std::unique_ptr<Pipeline>> build(const Profile& profile, std::uint32_t max_batch,
                                                   const ProgressFn& progress = {},
                                                   const ModelOptions& model_options = {},
                                                   const MemoryOptions& memory = {});
  // The memory plan build() would make, without loading the model (graft plan).
  static Expected<MemoryPlan> plan(const Profile& profile, std::uint32_t max_batch, const MemoryOptions& memory = {},
                                   const ModelOptions& model_options = {});
  ~Pipeline();

  const Profile& profile() const { return profile_; }
  Backend& backend() { return *backend_; }
  const Model& model() const { return *model_; }
  const std::shared_ptr<const Model>& shared_model() const { return model_; }
  const Tokenizer& tokenizer() const { return model_->tokenizer(); }
  const gguf::File& file() const { return model_->file(); }
  std::uint32_t context() const { return context_; }  // KV slots per session
  std::uint32_t max_batch() const { return max_batch_; }
  double load_seconds() const { return load_seconds_; }
  std::uint64_t kv_bytes_per_session() const { return kv_bytes_; }
  // What build() planned (and checked) before loading.
  const MemoryPlan& memory_plan() const { return plan_; }

  // A new, empty sequence with a KV store of context() slots from the profile's KV plugin.
  // `workspace`: one shared with other sessions that never run forward passes at the same time
  // (the server's sequences, whose passes its one queue thread runs); null: its own.
  Expected<std::unique_ptr<Session>> new_session(std::shared_ptr<Workspace> workspace = nullptr) const;

  // ---- for drafters (core/speculative): the same plugins, files and stores as the model ----
  const HostServices& host() const;
  // A store of the profile's KV plugin on the backend (its library stays loaded while it lives).
  Expected<std::shared_ptr<KvStore>> new_kv_store(const KvGeometry& geometry) const;
  // A plugin library by kind and name, from the profile's search path.
  Expected<std::shared_ptr<PluginLibrary>> find_plugin(PluginKind kind, std::string_view name) const;
  // A GGUF file validated as the model was (a path as given: profiles resolve theirs on reading).
  Expected<std::shared_ptr<const gguf::File>> open_gguf(std::string_view path) const;
  MemoryReport memory(Session& session) const;

 private:
  Pipeline() = default;
  // Plugins, backend, model file and KV store opened, and the memory planned: everything but loading.
  static Status open(const Profile& profile, std::uint32_t max_batch, const MemoryOptions& memory,
                     const ModelOptions& model_options, Pipeline& p, std::shared_ptr<const gguf::File>& file);

  Profile profile_;
  std::shared_ptr<LoadedPlugins> plugins_;
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<const Model> model_;
  std::shared_ptr<KvStoreFactory> kv_factory_;
  std::shared_ptr<PluginLibrary> kv_library_;
  std::uint32_t context_ = 0;
  std::uint32_t max_batch_ = 0;
  std::uint64_t kv_bytes_ = 0;
  double load_seconds_ = 0;
  MemoryPlan plan_;
};

}  // namespace graft
