// The `sysram` KV-store plugin: its profile keys, its factory and the exported descriptor. The
// store itself is a backend's (its kernel library's "sysram" store: the copies and the attention
// over streamed chunks run on the device); the CPU backend has one memory and refuses it.
#include <string>

#include "device_store.hpp"
#include "graft/graft.hpp"
#include "sysram_options.hpp"

namespace graft::kv {

namespace {

constexpr const char* kPrefix = "kvstore sysram: ";

class SysramFactory final : public KvStoreFactory {
 public:
  SysramFactory(const HostServices& host, const Config& config, const SysramOptions& o)
      : host_(host), config_(config), o_(o) {}

  std::uint64_t bytes_per_token(const KvGeometry& g) const noexcept override { return kv::bytes_per_token(g, o_.type, o_.type); }

  Expected<KvMemory> plan(Backend& backend, const KvGeometry& g) const override {
    KernelLibrary* lib = nullptr;
    GRAFT_TRY(library(backend, lib));
    auto m = sysram_memory(o_, g);
    if (!m) return Status(m.status().code(), kPrefix + m.status().message());
    return m;
  }

  Expected<std::unique_ptr<KvStore>> create(Backend& backend, const KvGeometry& g) override {
    KernelLibrary* lib = nullptr;
    GRAFT_TRY(library(backend, lib));
    if (auto m = sysram_memory(o_, g); !m) return Status(m.status().code(), kPrefix + m.status().message());
    return lib->create_kv_store("sysram", config_, backend, g);
  }

 private:
  // The kernel library that runs the store on this backend, or why there is none.
  Status library(Backend& backend, KernelLibrary*& lib) const {
    if (backend.host_accessible(MemoryKind::device))
      return Status(Errc::unsupported, std::string(kPrefix) + "backend '" + std::string(backend.name()) +
                                           "' computes in system RAM, where its KV cache already is: there is no "
                                           "device memory to offload from (use store = \"device\" or \"quant\")");
    lib = host_.kv_store_library("sysram", backend.name());
    if (!lib)
      return Status(Errc::not_implemented, std::string(kPrefix) + "not implemented on backend '" +
                                               std::string(backend.name()) + "' (no kernel library of it has a sysram "
                                               "store yet)");
    return Status::success();
  }

  const HostServices& host_;
  Config config_;
  SysramOptions o_;
};

const ConfigKeySpec kKeys[] = {
    {"type", ConfigType::string, "element type of the cache: \"f16\" (default) or \"f32\""},
    {"mode", ConfigType::string,
     "\"exact\" (default: every token attended, older ones streamed from system RAM) or \"retrieval-lossy\" (only the "
     "sink, the window and the best-scoring blocks attended: LOSSY)"},
    {"device_tokens", ConfigType::integer, "the newest tokens of each sequence kept on the device (default 4096)", 256,
     1 << 24},
    {"chunk", ConfigType::integer, "tokens per copy from system RAM in exact mode, two in flight (default 1024)", 64,
     1 << 20},
    {"host_budget", ConfigType::bytes,
     "system RAM one sequence's K/V may take (e.g. \"32GiB\"); required by retrieval-lossy, a context beyond it is "
     "refused at load",
     1, 1e18},
    {"sink", ConfigType::integer, "retrieval-lossy: the first tokens always attended (default 4)", 0, 4096},
    {"block", ConfigType::integer, "retrieval-lossy: tokens per scored block (default 64)", 16, 4096},
    {"top_blocks", ConfigType::integer, "retrieval-lossy: best-scoring blocks attended beyond the window (default 32)",
     1, 65536},
};

PluginObject* create(const HostServices& host, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    auto o = parse_sysram_options(config);
    if (!o) {
      error = o.status();
      return nullptr;
    }
    return new SysramFactory(host, config, *o);
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION,
    sizeof(PluginDescriptor),
    PluginKind::kv_store,
    "sysram",
    GRAFT_SDK_VERSION_STRING,
    "every token's K/V in system RAM, the newest on the device: exact attention over streamed chunks, or a lossy "
    "retrieval mode (a GPU backend's kernel library runs it)",
    kKeys,
    std::size(kKeys),
    &create,
};

}  // namespace

}  // namespace graft::kv

GRAFT_PLUGIN(graft::kv::kDescriptor)
