// Example third-party drafter: proposes continuations of a fixed list of phrases (boilerplate a
// user's prompts repeat: licence headers, sign-offs, API names). When the end of the context
// matches part of a phrase, the rest of every such phrase is proposed, merged into one token tree.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "graft/graft.hpp"

namespace {

using graft::Status;

class PhraseDrafter final : public graft::Drafter {
 public:
  PhraseDrafter(std::vector<std::vector<std::int32_t>> phrases, std::size_t min_match)
      : phrases_(std::move(phrases)), min_match_(min_match) {}

  graft::DrafterNeeds needs() const override { return {}; }

  Status propose(const graft::DraftRequest& req, graft::DraftTree& out) override {
    // The longest match between a context suffix and a phrase span wins; ties add branches.
    std::size_t best = 0;
    std::vector<std::pair<const std::vector<std::int32_t>*, std::size_t>> conts;  // phrase, start
    for (const auto& p : phrases_) {
      for (std::size_t end = 1; end < p.size(); ++end) {
        std::size_t len = 0;
        while (len < end && len < req.context.size() &&
               p[end - 1 - len] == req.context[req.context.size() - 1 - len])
          ++len;
        if (len < min_match_ || len < best) continue;
        if (len > best) {
          best = len;
          conts.clear();
        }
        conts.emplace_back(&p, end);
      }
    }
    // Merge the continuations into a tree, sharing common prefixes.
    std::map<std::pair<std::int32_t, std::int32_t>, std::int32_t> child;  // (parent, token) -> node
    for (const auto& [phrase, start] : conts) {
      std::int32_t parent = -1;
      for (std::size_t i = start, depth = 0; i < phrase->size() && depth < req.max_depth; ++i, ++depth) {
        auto key = std::make_pair(parent, (*phrase)[i]);
        auto it = child.find(key);
        if (it == child.end()) {
          if (out.size() >= req.max_nodes) break;
          out.add((*phrase)[i], parent, 1.0f / static_cast<float>(conts.size()));  // q: one of the matches
          it = child.emplace(key, static_cast<std::int32_t>(out.size() - 1)).first;
        }
        parent = it->second;
      }
    }
    return Status::success();
  }

  // Stateless: it reads the context each round.
  Status begin(const graft::CommitInfo&) override { return Status::success(); }
  Status accept(const graft::CommitInfo&) override { return Status::success(); }
  Status truncate(std::uint32_t) override { return Status::success(); }

 private:
  std::vector<std::vector<std::int32_t>> phrases_;
  std::size_t min_match_;
};

class PhraseDrafterFactory final : public graft::DrafterFactory {
 public:
  PhraseDrafterFactory(std::vector<std::string> phrases, std::size_t min_match)
      : phrases_(std::move(phrases)), min_match_(min_match) {}

  // Its phrases' tokens are all it holds, in host memory, whatever the context: nothing to plan.
  graft::Expected<graft::DrafterMemory> memory(const graft::DrafterHost&) const override { return graft::DrafterMemory{}; }

  graft::Expected<std::unique_ptr<graft::Drafter>> create(const graft::DrafterHost& host) override {
    const graft::ModelView& target = host.target();
    std::vector<std::vector<std::int32_t>> tokenized;
    for (const auto& p : phrases_) {
      auto ids = target.tokenize(p);
      if (!ids) return Status(ids.status().code(), "phrase drafter: cannot tokenize a phrase: " + ids.status().message());
      tokenized.push_back(std::move(*ids));
    }
    return std::unique_ptr<graft::Drafter>(new PhraseDrafter(std::move(tokenized), min_match_));
  }

 private:
  std::vector<std::string> phrases_;
  std::size_t min_match_;
};

const graft::ConfigKeySpec kKeys[] = {
    {"phrases", graft::ConfigType::string_list, "phrases to propose continuations of", 0, 0, true},
    {"min_match", graft::ConfigType::integer, "tokens that must match before proposing", 1, 64, false},
};

graft::PluginObject* create(const graft::HostServices& host, const graft::Config& config, Status& error) noexcept {
  return graft::guarded_create(error, [&]() -> graft::PluginObject* {
    auto phrases = config.get_string_list("phrases");
    if (!phrases || phrases->empty()) {
      error = Status(graft::Errc::invalid_argument, "'phrases' must list at least one phrase");
      return nullptr;
    }
    const auto min_match = config.get_int("min_match").value_or(2);
    host.log(graft::LogLevel::debug, "phrase", std::to_string(phrases->size()) + " phrases");
    return new PhraseDrafterFactory(std::move(*phrases), static_cast<std::size_t>(min_match));
  });
}

const graft::PluginDescriptor kDescriptor{
    GRAFT_ABI_VERSION, sizeof(graft::PluginDescriptor), graft::PluginKind::drafter, "phrase", "1.0.0",
    "example third-party drafter: continues phrases from a fixed list", kKeys, std::size(kKeys), &create,
};

}  // namespace

GRAFT_PLUGIN(kDescriptor)
