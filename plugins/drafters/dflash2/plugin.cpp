// The dflash2 drafter plugin: descriptor, keys and factory (dflash_drafter.hpp has the drafter).
#include <mutex>

#include "dflash_drafter.hpp"

namespace {

using graft::Status;
using namespace graft::dflash2;

// Opens the drafter file once for all the sequences of one target: the bound weights are
// read-only; each drafter has its own block runner, KV store and scratch.
class DFlashFactory final : public graft::DrafterFactory {
 public:
  explicit DFlashFactory(DrafterOptions o) : o_(std::move(o)) {}

  graft::Expected<std::unique_ptr<graft::Drafter>> create(const graft::DrafterHost& host) override {
    std::shared_ptr<const DFlashFile> file;
    {
      std::lock_guard lock(mutex_);
      // A target's address is unique while a drafter over it lives (the cache is held by them).
      if (cached_for_ == &host.target()) file = cached_.lock();
      if (!file) {
        auto opened = DFlashFile::open(host, o_.model);
        if (!opened) return std::move(opened).status();
        file = std::move(*opened);
        cached_ = file;
        cached_for_ = &host.target();
      }
    }
    auto made = DFlashDrafter::create(host, std::move(file), o_);
    if (!made) return std::move(made).status();
    return std::unique_ptr<graft::Drafter>(std::move(*made));
  }

  graft::Expected<graft::DrafterMemory> memory(const graft::DrafterHost& host) const override {
    auto file = DFlashFile::open(host, o_.model);
    if (!file) return std::move(file).status();
    return DFlashDrafter::memory(host, **file, o_);
  }

 private:
  DrafterOptions o_;
  std::mutex mutex_;
  std::weak_ptr<const DFlashFile> cached_;
  const graft::ModelView* cached_for_ = nullptr;
};

const graft::ConfigKeySpec kKeys[] = {
    {"model", graft::ConfigType::string,
     "the DFlash drafter GGUF (llama.cpp's dflash convention, DFlash2 extras optional); relative to the profile", 0, 0,
     true},
    {"max_draft", graft::ConfigType::integer, "slots drafted per round (default: the file's block_size - 1)", 1, 63,
     false},
    {"top_k", graft::ConfigType::integer, "children per tree node: each slot's top candidates (default 2; 1 = a chain)",
     1, 64, false},
    {"adaptive", graft::ConfigType::boolean,
     "switch to the short block while the long one's last slots are rarely accepted, probing it again (default true)",
     0, 0, false},
    {"short_block", graft::ConfigType::integer, "rows of the short block, the anchor included (default: half the long block)",
     2, 64, false},
    {"selector", graft::ConfigType::boolean,
     "re-score candidates with the file's DFlash2 selector when it has one (default true)", 0, 0, false},
    {"resume_window", graft::ConfigType::integer,
     "after rounds the mix skipped this drafter, context K/V for at most this many of the queued tokens (the latest; "
     "the block's attention skips the rest; 0 = all, exact; default 64)", 0, 1 << 20, false},
};

graft::PluginObject* create(const graft::HostServices&, const graft::Config& config, Status& error) noexcept {
  return graft::guarded_create(error, [&]() -> graft::PluginObject* {
    DrafterOptions o;
    o.model = config.get_string("model").value_or("");
    o.max_draft = static_cast<std::uint32_t>(config.get_int("max_draft").value_or(0));
    o.top_k = static_cast<std::uint32_t>(config.get_int("top_k").value_or(2));
    o.adaptive = config.get_bool("adaptive").value_or(true);
    o.short_block = static_cast<std::uint32_t>(config.get_int("short_block").value_or(0));
    o.selector = config.get_bool("selector").value_or(true);
    o.resume_window = static_cast<std::uint32_t>(config.get_int("resume_window").value_or(64));
    return new DFlashFactory(std::move(o));
  });
}

const graft::PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor), graft::PluginKind::drafter, "dflash2", GRAFT_SDK_VERSION_STRING,
    "drafts a whole block per pass with a DFlash/DFlash2 drafter GGUF over the target's hidden states", kKeys,
    std::size(kKeys), &create,
};

}  // namespace

GRAFT_PLUGIN(kDescriptor)
