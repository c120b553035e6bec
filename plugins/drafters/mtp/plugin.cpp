// The mtp drafter plugin: descriptor, keys and factory (mtp_drafter.hpp has the drafter).
#include "mtp_drafter.hpp"

namespace {

using graft::Status;

class MtpFactory final : public graft::DrafterFactory {
 public:
  explicit MtpFactory(graft::mtp::MtpOptions o) : o_(o) {}
  graft::Expected<std::unique_ptr<graft::Drafter>> create(const graft::DrafterHost& host) override {
    return graft::mtp::MtpDrafter::create(host, o_);
  }
  graft::Expected<graft::DrafterMemory> memory(const graft::DrafterHost& host) const override {
    return graft::mtp::MtpDrafter::memory(host, o_);
  }

 private:
  graft::mtp::MtpOptions o_;
};

const graft::ConfigKeySpec kKeys[] = {
    {"max_draft", graft::ConfigType::integer, "draft steps per round (default 3)", 1, 16, false},
    {"p_min", graft::ConfigType::real, "stop drafting when the head's top probability is below this (default 0: the adaptive verify budget already leaves unlikely drafts out; a higher value saves their draft steps)", 0,
     1, false},
    {"top_k", graft::ConfigType::integer,
     "first-step candidates proposed side by side (a tree; 1 = a chain, the default)", 1, 8, false},
    {"resume_window", graft::ConfigType::integer,
     "after rounds the mix skipped this drafter, run at most this many of the queued entries (the latest; the "
     "head's attention skips the rest; 0 = all, exact; default 16)", 0, 1 << 20, false},
};

graft::PluginObject* create(const graft::HostServices&, const graft::Config& config, Status& error) noexcept {
  return graft::guarded_create(error, [&]() -> graft::PluginObject* {
    graft::mtp::MtpOptions o;
    o.max_draft = static_cast<std::uint32_t>(config.get_int("max_draft").value_or(3));
    o.p_min = static_cast<float>(config.get_real("p_min").value_or(0.0));
    o.top_k = static_cast<std::uint32_t>(config.get_int("top_k").value_or(1));
    o.resume_window = static_cast<std::uint32_t>(config.get_int("resume_window").value_or(16));
    return new MtpFactory(o);
  });
}

const graft::PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor), graft::PluginKind::drafter, "mtp", GRAFT_SDK_VERSION_STRING,
    "drafts with the target's own MTP (nextn) block", kKeys, std::size(kKeys), &create,
};

}  // namespace

GRAFT_PLUGIN(kDescriptor)
