// A drafter that counts its live objects, so tests can watch plugin lifetimes across unloads.
#include <atomic>

#include "graft/graft.hpp"

namespace {

std::atomic<int> g_live{0};

class CountingDrafter final : public graft::Drafter {
 public:
  CountingDrafter() { ++g_live; }
  ~CountingDrafter() override { --g_live; }
  graft::DrafterNeeds needs() const override { return {}; }
  graft::Status propose(const graft::DraftRequest& r, graft::DraftTree& out) override {
    // Proposes the last context token repeated, as a chain.
    if (r.context.empty()) return graft::Status::success();
    for (std::uint32_t i = 0; i < r.max_nodes && i < r.max_depth; ++i)
      out.add(r.context.back(), static_cast<std::int32_t>(i) - 1, 1.0f);
    return graft::Status::success();
  }
  graft::Status begin(const graft::CommitInfo&) override { return graft::Status::success(); }
  graft::Status accept(const graft::CommitInfo&) override { return graft::Status::success(); }
  graft::Status truncate(std::uint32_t) override { return graft::Status::success(); }
};

class Factory final : public graft::DrafterFactory {
 public:
  Factory() { ++g_live; }
  ~Factory() override { --g_live; }
  graft::Expected<std::unique_ptr<graft::Drafter>> create(const graft::DrafterHost&) override {
    return std::unique_ptr<graft::Drafter>(new CountingDrafter());
  }
};

graft::PluginObject* create(const graft::HostServices&, const graft::Config&, graft::Status& err) noexcept {
  return graft::guarded_create(err, [] { return new Factory(); });
}

const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::drafter, "counting", "1.2.3",
                                          "test drafter", nullptr, 0, &create};
}  // namespace

// Visible to the test through dlsym: how many objects of this library are alive.
extern "C" __attribute__((visibility("default"))) int fake_counting_live() { return g_live.load(); }

GRAFT_PLUGIN(kDescriptor)
