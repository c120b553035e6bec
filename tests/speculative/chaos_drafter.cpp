// A misbehaving drafter for the guard tests: `mode` picks how it fails. Every mode must leave
// the generated tokens exactly those of plain decoding, with a warning and never a crash.
#include <stdexcept>
#include <string>

#include "graft/graft.hpp"

namespace {

using graft::Status;

class Chaos final : public graft::Drafter {
 public:
  explicit Chaos(std::string mode) : mode_(std::move(mode)) {}
  graft::DrafterNeeds needs() const override {
    if (mode_ == "throw_needs") throw std::runtime_error("needs exploded");
    graft::DrafterNeeds n;
    n.taps = {0, 2};  // ask for hidden states too, so the handing-over runs
    if (mode_ == "bad_tap") n.taps = {99};
    n.normed_output = true;
    return n;
  }
  Status begin(const graft::CommitInfo&) override {
    if (mode_ == "throw_begin") throw std::runtime_error("begin exploded");
    return Status::success();
  }
  Status propose(const graft::DraftRequest& r, graft::DraftTree& out) override {
    ++rounds_;
    if (mode_ == "throw_propose") throw std::runtime_error("propose exploded");
    if (mode_ == "error_propose") return Status(graft::Errc::internal, "propose failed on purpose");
    const std::int32_t last = r.context.back();
    if (mode_ == "bad_parent") {
      out.add(last, -1);
      out.add(last, 1);  // its own parent
    } else if (mode_ == "bad_token") {
      out.add(1 << 30, -1);
    } else if (mode_ == "too_many") {
      for (std::uint32_t i = 0; i <= r.max_nodes; ++i) out.add(static_cast<std::int32_t>(i % 7), -1);
    } else if (mode_ == "too_deep") {
      for (std::uint32_t i = 0; i <= r.max_depth; ++i) out.add(last, static_cast<std::int32_t>(i) - 1);
    } else {
      // A plausible chain: repeat the last token (often wrong, sometimes right).
      for (std::uint32_t i = 0; i < 3 && i < r.max_nodes && i < r.max_depth; ++i)
        out.add(last, static_cast<std::int32_t>(i) - 1, 0.5f);
    }
    return Status::success();
  }
  Status accept(const graft::CommitInfo& info) override {
    if (mode_ == "error_accept" && rounds_ > 3) return Status(graft::Errc::internal, "accept failed on purpose");
    if (mode_ == "throw_accept" && rounds_ > 3) throw 42;  // not even a std::exception
    if (info.hidden.n_per_token != 3) return Status(graft::Errc::internal, "hidden states missing");
    return Status::success();
  }
  Status truncate(std::uint32_t) override { return Status::success(); }

 private:
  std::string mode_;
  int rounds_ = 0;
};

class Factory final : public graft::DrafterFactory {
 public:
  explicit Factory(std::string mode) : mode_(std::move(mode)) {}
  graft::Expected<std::unique_ptr<graft::Drafter>> create(const graft::DrafterHost&) override {
    if (mode_ == "throw_create") throw std::runtime_error("create exploded");
    if (mode_ == "error_create") return Status(graft::Errc::unsupported, "this target is not for me");
    return std::unique_ptr<graft::Drafter>(new Chaos(mode_));
  }

 private:
  std::string mode_;
};

const graft::ConfigKeySpec kKeys[] = {{"mode", graft::ConfigType::string, "how to fail", 0, 0, true}};

graft::PluginObject* create(const graft::HostServices&, const graft::Config& config, Status& error) noexcept {
  return graft::guarded_create(error, [&] { return new Factory(config.get_string("mode").value_or("")); });
}

const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::drafter, "chaos", "1.0.0",
                                          "a drafter that fails on purpose", kKeys, std::size(kKeys), &create};

}  // namespace

GRAFT_PLUGIN(kDescriptor)
