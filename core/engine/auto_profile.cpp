#include "engine/auto_profile.hpp"

#include <fmt/format.h>

#include <optional>
#include <vector>

#include "common/human_bytes.hpp"

namespace graft {

namespace {

bool from_command_line(const Profile& p, const char* setting) {
  const auto it = p.locations.find(setting);
  return it != p.locations.end() && it->second.rfind("command line", 0) == 0;
}

struct KvCandidate {
  const char* store;
  const char* type_k;  // null: the device store's f16
  const char* type_v;
};

PluginChoice kv_choice(const KvCandidate& c) {
  PluginChoice kv{c.store, {}, "--profile auto", {}};
  if (c.type_k) {
    kv.config.set("type_k", std::string(c.type_k));
    kv.config.set("type_v", std::string(c.type_v));
  }
  return kv;
}

}  // namespace

Expected<AutoChoice> choose_profile(const Profile& base, const PlanFn& plan) {
  // The backend: the first that plans (a GPU backend without a GPU does not).
  const std::vector<std::string> backends = {"cuda", "cpu"};
  const bool kv_given = from_command_line(base, "kv.store");
  const bool context_given = from_command_line(base, "context.size");
  std::string skipped;
  for (const std::string& backend : backends) {
    std::vector<KvCandidate> kvs = {{"device", nullptr, nullptr}};
    if (backend == "cpu") kvs.insert(kvs.end(), {{"quant", "q8_0", "q8_0"}, {"quant", "q8_0", "tq3"}});
    if (kv_given) kvs.resize(1);
    std::optional<AutoChoice> best;
    std::uint32_t best_context = 0;
    Status first_error;
    for (const KvCandidate& kv : kvs) {
      Profile p = base;
      p.auto_choice = false;
      if (p.backend.name != backend) p.backend = PluginChoice{backend, {}, "--profile auto", {}};
      if (!kv_given) p.kv = kv_choice(kv);
      if (!context_given) p.context = 0;  // the largest that fits
      auto planned = plan(p);
      if (!planned) {
        if (first_error.ok()) first_error = planned.status();
        continue;
      }
      const std::string kv_text = kv_label(p.kv);
      const std::string budget = planned->budget ? human_bytes(planned->budget) + " (" + planned->budget_source + ")"
                                                 : planned->budget_source;
      if (context_given) {
        AutoChoice c{p, fmt::format("backend {}{}, KV {} (given), context {} (given), in {}", backend, skipped,
                                    kv_text, planned->context, budget)};
        if (planned->fits() || kv_given) return c;
        if (!best) best = c;  // the smallest cache is tried next
        continue;
      }
      p.context = planned->context;
      p.locations["context.size"] = "--profile auto";
      if (planned->context >= planned->context_limit)
        return AutoChoice{p, fmt::format("backend {}{}, KV {}: the model's whole training context ({} tokens) fits in {}",
                                         backend, skipped, kv_text, planned->context, budget)};
      if (planned->context > best_context) {
        best_context = planned->context;
        best = AutoChoice{p, fmt::format("backend {}{}, KV {}: {} tokens fit in {}, the most of any KV cache (the "
                                         "training context is {})",
                                         backend, skipped, kv_text, planned->context, budget, planned->context_limit)};
      }
    }
    if (best) return *best;
    // This backend cannot run here (no GPU): the next one, saying why.
    skipped += fmt::format(" ({}: {})", backend, first_error.message());
  }
  return Status(Errc::unsupported, "--profile auto: no backend can run the model here:" + skipped);
}

}  // namespace graft
