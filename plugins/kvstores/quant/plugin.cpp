// The `quant` KV-store plugin: K and V each in its own type (f16, f32, q8_0, q4_0, tq3), the CPU's store
// (plugins/kvstores/device/device_store.hpp) with attention reading the quantized rows directly:
// a chunk of rows decoded at a time into L1, never a dequantized copy of the cache.
#include <algorithm>
#include <optional>
#include <string>

#include "device_store.hpp"
#include "graft/graft.hpp"

namespace graft::kv {

namespace {

constexpr const char* kPrefix = "kvstore quant: ";

class QuantKvStoreFactory final : public KvStoreFactory {
 public:
  QuantKvStoreFactory(CacheType k, CacheType v) : k_(k), v_(v) {}

  std::uint64_t bytes_per_token(const KvGeometry& g) const noexcept override { return kv::bytes_per_token(g, k_, v_); }
  // create's refusals, before anything is allocated.
  Expected<KvMemory> plan(Backend& backend, const KvGeometry& g) const override {
    GRAFT_TRY(on_this(backend));
    KvGeometry one = g;
    one.capacity = std::max<std::uint32_t>(g.capacity, 1);  // a context being sized may be 0 yet
    GRAFT_TRY(DeviceKvStore::check(one, k_, v_, kPrefix));
    return KvMemory{bytes_per_token(g) * g.capacity, 0};
  }
  Expected<std::unique_ptr<KvStore>> create(Backend& backend, const KvGeometry& g) override {
    GRAFT_TRY(on_this(backend));
    return DeviceKvStore::create(backend, g, k_, v_, kPrefix);
  }

 private:
  static Status on_this(Backend& backend) {
    if (!backend.host_accessible(MemoryKind::device))
      return Status(Errc::unsupported, std::string(kPrefix) + "not implemented on " + std::string(backend.name()) +
                                           " (quantized K/V run on the cpu backend; on a GPU use the device store)");
    return Status::success();
  }
  CacheType k_, v_;
};

const ConfigKeySpec kKeys[] = {
    {"type_k", ConfigType::string,
     "element type of the K cache: \"f16\" (default), \"f32\", \"q8_0\" (8.5 bits, ggml's), \"q4_0\" (4.5 bits) or "
     "\"tq3\" (3.5 bits, rotated: head sizes that are powers of two); -ctk / --cache-type-k on the command line"},
    {"type_v", ConfigType::string,
     "element type of the V cache, as type_k; -ctv / --cache-type-v on the command line"},
};

// The type a key names (default f16), or an error naming the key and the valid types.
std::optional<CacheType> type_of(const Config& config, const char* key, Status& error) {
  if (!config.has(key)) return CacheType::f16;
  const auto text = config.get_string(key);
  const auto type = text ? cache_type_from_name(*text) : std::nullopt;
  if (!type)
    error = Status(Errc::invalid_argument, std::string(key) + " = " + (text ? "\"" + *text + "\"" : "a non-string") +
                                               " is not supported; valid types: f16, f32, q8_0, q4_0, tq3");
  return type;
}

PluginObject* create(const HostServices&, const Config& config, Status& error) noexcept {
  return guarded_create(error, [&]() -> PluginObject* {
    const auto k = type_of(config, "type_k", error);
    if (!k) return nullptr;
    const auto v = type_of(config, "type_v", error);
    if (!v) return nullptr;
    return new QuantKvStoreFactory(*k, *v);
  });
}

const PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION,
    sizeof(PluginDescriptor),
    PluginKind::kv_store,
    "quant",
    GRAFT_SDK_VERSION_STRING,
    "K and V each f16, f32, q8_0, q4_0 (ggml's blocks) or tq3 (rotated 3-bit) with CPU attention over the quantized rows",
    kKeys,
    std::size(kKeys),
    &create,
};

}  // namespace

}  // namespace graft::kv

GRAFT_PLUGIN(graft::kv::kDescriptor)
