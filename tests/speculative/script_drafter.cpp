// A test drafter that knows the answer: `script` is the whole token sequence plain greedy decoding
// produces (prompt, then output). Each round it proposes the script's next tokens with a mistake
// at a depth that moves from round to round (or none), beside a wrong sibling branch, so a run
// sees full acceptance, partial acceptance and rejected branches in every mix, whatever the
// target (a random-weight model's output never repeats, so the n-gram drafter finds nothing).
#include <sstream>
#include <string>
#include <vector>

#include "graft/graft.hpp"

namespace {

using graft::Status;

class Script final : public graft::Drafter {
 public:
  explicit Script(std::vector<std::int32_t> script) : script_(std::move(script)) {}
  graft::DrafterNeeds needs() const override { return {}; }
  Status begin(const graft::CommitInfo&) override { return Status::success(); }
  Status propose(const graft::DraftRequest& r, graft::DraftTree& out) override {
    const std::size_t at = r.context.size();  // the script's index of the first token to propose
    ++round_;
    if (at >= script_.size()) return Status::success();
    const std::uint32_t depth = std::min<std::uint32_t>({r.max_depth, r.max_nodes > 1 ? r.max_nodes - 1 : 1, 6});
    const std::uint32_t wrong_at = round_ % (depth + 2);  // == depth or depth + 1: no mistake
    std::int32_t parent = -1;
    for (std::uint32_t d = 0; d < depth && at + d < script_.size(); ++d) {
      std::int32_t t = script_[at + d];
      if (d == wrong_at) t = (t + 1) % 256;
      out.add(t, parent, 0.9f);
      parent = static_cast<std::int32_t>(out.tokens.size() - 1);
    }
    if (r.max_nodes > out.tokens.size()) out.add((script_[at] + 7) % 256, -1, 0.1f);  // a wrong first token
    return Status::success();
  }
  Status accept(const graft::CommitInfo&) override { return Status::success(); }
  Status truncate(std::uint32_t) override { return Status::success(); }

 private:
  std::vector<std::int32_t> script_;
  std::uint32_t round_ = 0;
};

class Factory final : public graft::DrafterFactory {
 public:
  explicit Factory(std::vector<std::int32_t> script) : script_(std::move(script)) {}
  graft::Expected<std::unique_ptr<graft::Drafter>> create(const graft::DrafterHost&) override {
    return std::unique_ptr<graft::Drafter>(new Script(script_));
  }

 private:
  std::vector<std::int32_t> script_;
};

const graft::ConfigKeySpec kKeys[] = {{"script", graft::ConfigType::string, "token ids, comma-separated", 0, 0, true}};

graft::PluginObject* create(const graft::HostServices&, const graft::Config& config, Status& error) noexcept {
  return graft::guarded_create(error, [&] {
    std::vector<std::int32_t> script;
    std::stringstream in(config.get_string("script").value_or(""));
    for (std::string id; std::getline(in, id, ',');) script.push_back(std::stoi(id));
    return new Factory(std::move(script));
  });
}

const graft::PluginDescriptor kDescriptor{GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor),
                                          graft::PluginKind::drafter, "script", "1.0.0",
                                          "a drafter that proposes a known answer with mistakes", kKeys, std::size(kKeys),
                                          &create};

}  // namespace

GRAFT_PLUGIN(kDescriptor)
