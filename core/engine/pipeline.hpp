// Everything a profile asks for, loaded and wired: plugins (ABI and keys checked), backend,
// weight formats, the model file, tokenizer, transformer and a KV store sized for the context.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "graft/backend.hpp"
#include "graft/kv_store.hpp"
#include "gguf/gguf_file.hpp"
#include "model/transformer.hpp"
#include "plugin_host/host_services.hpp"
#include "plugin_host/plugin_registry.hpp"
#include "plugin_host/weight_formats.hpp"
#include "profile/profile.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft {

struct MemoryReport {
  std::uint64_t weights = 0;  // mapped model bytes the forward pass reads
  std::uint64_t kv = 0;       // KV store (device + host)
  std::uint64_t scratch = 0;  // activations
  std::uint64_t prepared = 0; // weight copies made at load: kernel layouts (FormatKernels::prepare), stacked q/k/v, gate/up
  std::uint64_t released = 0; // of `weights`, file pages dropped once those copies were made
};

// Progress of a long step: fraction done in [0, 1].
using ProgressFn = std::function<void(std::string_view what, double fraction)>;

class Pipeline {
 public:
  // Fails with one line naming the cause (profile location, plugin file, model file, tensor).
  static Expected<std::unique_ptr<Pipeline>> build(const Profile& profile, std::uint32_t max_batch,
                                                   const ProgressFn& progress = {},
                                                   const TransformerOptions& model_options = {});
  ~Pipeline();

  const Profile& profile() const { return profile_; }
  Backend& backend() { return *backend_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  Transformer& model() { return *model_; }
  KvStore& kv() { return *kv_; }
  const gguf::File& file() const { return *file_; }
  std::uint32_t context() const { return context_; }
  double load_seconds() const { return load_seconds_; }
  MemoryReport memory() const;

 private:
  Pipeline() = default;

  Profile profile_;
  std::unique_ptr<PluginRegistry> registry_;
  std::unique_ptr<DefaultHostServices> host_;
  WeightFormats formats_;
  std::shared_ptr<Backend> backend_;
  std::shared_ptr<const gguf::File> file_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<Transformer> model_;
  std::shared_ptr<KvStoreFactory> kv_factory_;
  std::shared_ptr<KvStore> kv_;
  std::uint32_t context_ = 0;
  double load_seconds_ = 0;
};

}  // namespace graft
