#include "engine/memory_plan.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>

#include "common/human_bytes.hpp"
#include "model/recurrent_state.hpp"
#include "model/workspace.hpp"

namespace graft {

namespace {

std::uint64_t sat_mul(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}
std::uint64_t sat_add(std::uint64_t a, std::uint64_t b) {
  std::uint64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? std::numeric_limits<std::uint64_t>::max() : r;
}

// Contexts the planner picks or suggests: a multiple of 256, or of 16 below 256.
std::uint64_t round_context(std::uint64_t tokens) { return tokens >= 256 ? tokens / 256 * 256 : tokens / 16 * 16; }

// The items that do not grow with the context (all sequences).
struct Fixed {
  std::vector<PlanItem> items;
  std::uint64_t bytes = 0;
};

std::string drafter_names(const std::vector<DrafterPlan>& ds, std::uint64_t DrafterPlan::*field) {
  std::string out;
  for (const DrafterPlan& d : ds)
    if (d.*field) out += (out.empty() ? "" : ", ") + d.name + " " + human_bytes(d.*field);
  return out;
}

Fixed fixed_items(const PlanRequest& r) {
  Fixed s;
  const WeightsPlan& w = r.weights;
  const std::uint64_t resident = w.file_bytes - std::min(w.file_bytes, w.released_bytes) + w.prepared_bytes;
  s.items.push_back({"weights", resident,
                     fmt::format("file {}, copies made at load {}, file pages given back {}", human_bytes(w.file_bytes),
                                 human_bytes(w.prepared_bytes), human_bytes(w.released_bytes))});
  if (r.weights.needs.delta_net) {
    const std::uint64_t state = RecurrentState::bytes_for(r.params, r.max_tree_rows);
    s.items.push_back({"recurrent state", sat_mul(state, r.parallel),
                       fmt::format("{} per sequence (with {} kept tree rows) x {}", human_bytes(state),
                                   r.max_tree_rows, r.parallel)});
    if (r.state_checkpoints > 0) {
      const std::uint64_t one = RecurrentState::bytes_for(r.params, 0);
      s.items.push_back({"state checkpoints", sat_mul(sat_mul(one, r.state_checkpoints), r.parallel),
                         fmt::format("up to {} of {} per sequence x {}", r.state_checkpoints, human_bytes(one),
                                     r.parallel)});
    }
  }
  const std::uint64_t ws = Workspace::bytes_for(r.params, r.weights.needs, r.max_batch, r.graphs);
  const std::uint32_t workspaces = r.shared_workspace ? 1 : r.parallel;
  s.items.push_back({"workspace", sat_mul(ws, workspaces),
                     fmt::format("activations of {} rows per pass{}", r.max_batch,
                                 workspaces > 1 ? fmt::format(" x {}", workspaces) : std::string())});
  // Each sequence's drafters: weights bound once or per sequence, their buffers and runners'
  // workspaces, and what the verify passes keep of the target's hidden states for them.
  std::uint64_t shared = 0, weights = 0, buffers = 0;
  for (const DrafterPlan& d : r.drafters) {
    shared = sat_add(shared, d.shared_weights);
    weights = sat_add(weights, d.weights);
    buffers = sat_add(buffers, d.buffers);
  }
  const std::string per_seq = r.parallel > 1 ? fmt::format(" x {} sequences", r.parallel) : "";
  if (shared || weights)
    s.items.push_back({"drafter weights", sat_add(shared, sat_mul(weights, r.parallel)),
                       fmt::format("{}{}", drafter_names(r.drafters, &DrafterPlan::shared_weights),
                                   weights ? fmt::format("{}per sequence: {}{}", shared ? "; " : "",
                                                         drafter_names(r.drafters, &DrafterPlan::weights), per_seq)
                                           : "")});
  if (buffers)
    s.items.push_back({"drafter buffers", sat_mul(buffers, r.parallel),
                       fmt::format("{}{}", drafter_names(r.drafters, &DrafterPlan::buffers), per_seq)});
  if (r.taps_bytes) s.items.push_back({"verify taps", sat_mul(r.taps_bytes, r.parallel), r.taps_detail + per_seq});
  for (const PlanItem& i : s.items) s.bytes = sat_add(s.bytes, i.bytes);
  return s;
}

// The items that grow with the context, at `context` tokens for every sequence: the KV cache (in
// backend memory, and in system RAM for an offloading store) and the drafters' KV caches and
// host indexes. A store's refusal of the geometry is the error.
struct Growing {
  std::vector<PlanItem> items;
  std::uint64_t device = 0, host = 0;
};

Expected<Growing> growing_items(const PlanRequest& r, std::uint32_t context) {
  Growing g;
  const std::string seqs = r.parallel > 1 ? fmt::format(" x {} sequences", r.parallel) : "";
  auto kv = r.kv->plan(*r.backend, r.params.kv_geometry(context));
  if (!kv) return kv.status();
  const std::uint64_t per_token = r.kv->bytes_per_token(r.params.kv_geometry(std::max<std::uint32_t>(context, 1)));
  g.items.push_back({"KV cache", sat_mul(kv->device_bytes, r.parallel),
                     fmt::format("{}: {} per token x {} tokens{}", r.kv_label, human_bytes(per_token), context, seqs)});
  if (kv->host_bytes)
    g.items.push_back({"KV cache (system RAM)", sat_mul(kv->host_bytes, r.parallel),
                       fmt::format("{}: the tokens kept in host memory{}", r.kv_label, seqs), true});
  std::uint64_t drafters = 0, drafters_host = 0, index_host = 0;
  std::string each, indexes;
  // Host memory is the backend's on the CPU; beside a GPU's it is system RAM.
  const bool host_is_backend = r.backend->host_accessible(MemoryKind::device);
  for (const DrafterPlan& d : r.drafters) {
    if (d.kv.n_layers) {
      KvGeometry geometry = d.kv;
      geometry.capacity = context + d.kv_extra;
      auto dk = r.kv->plan(*r.backend, geometry);
      if (!dk) return Status(dk.status().code(), "drafter '" + d.name + "': " + dk.status().message());
      drafters = sat_add(drafters, dk->device_bytes);
      drafters_host = sat_add(drafters_host, dk->host_bytes);
      each += fmt::format("{}{} {} ({} tokens)", each.empty() ? "" : ", ", d.name,
                          human_bytes(dk->device_bytes + dk->host_bytes), geometry.capacity);
    }
    if (d.index_per_token) {
      const std::uint64_t bytes = sat_mul(d.index_per_token, context);
      std::string& said = host_is_backend ? each : indexes;
      said += fmt::format("{}{}'s index at most {} per token", said.empty() ? "" : ", ", d.name,
                          human_bytes(d.index_per_token));
      (host_is_backend ? drafters : index_host) = sat_add(host_is_backend ? drafters : index_host, bytes);
    }
  }
  if (drafters) g.items.push_back({"drafter KV", sat_mul(drafters, r.parallel), fmt::format("{}: {}{}", r.kv_label, each, seqs)});
  if (drafters_host)
    g.items.push_back({"drafter KV (system RAM)", sat_mul(drafters_host, r.parallel),
                       fmt::format("{}: the tokens kept in host memory{}", r.kv_label, seqs), true});
  if (index_host)
    g.items.push_back({"drafter index (system RAM)", sat_mul(index_host, r.parallel),
                       fmt::format("{} x {} tokens{}", indexes, context, seqs), true});
  for (const PlanItem& i : g.items) (i.host ? g.host : g.device) = sat_add(i.host ? g.host : g.device, i.bytes);
  return g;
}

// Whether `context` tokens fit beside the fixed items; a store refusing for lack of memory (an
// offload past its host budget) does not fit, another refusal is the error.
Expected<bool> context_fits(const PlanRequest& r, std::uint64_t fixed, std::uint32_t context) {
  auto g = growing_items(r, context);
  if (!g) {
    if (g.status().code() == Errc::out_of_memory) return false;
    return g.status();
  }
  return (r.budget == 0 || sat_add(fixed, g->device) <= r.budget) && (r.host_budget == 0 || g->host <= r.host_budget);
}

// The largest context in [1, limit] that fits (0: none), rounded as the planner picks contexts.
Expected<std::uint32_t> largest_context(const PlanRequest& r, std::uint64_t fixed, std::uint32_t limit) {
  std::uint32_t lo = 0, hi = limit;  // lo fits (0 trivially), the answer is in [lo, hi]
  while (lo < hi) {
    const std::uint32_t mid = lo + (hi - lo + 1) / 2;
    auto fits = context_fits(r, fixed, mid);
    if (!fits) return fits.status();
    if (*fits) lo = mid;
    else hi = mid - 1;
  }
  return static_cast<std::uint32_t>(round_context(lo));
}

}  // namespace

const PlanItem* MemoryPlan::item(std::string_view what) const {
  for (const PlanItem& i : items)
    if (i.what == what) return &i;
  return nullptr;
}

std::string MemoryPlan::table() const {
  std::string out = note.empty() ? "" : "  note: " + note + "\n";
  std::size_t width = 5;  // "total"
  for (const PlanItem& i : items) width = std::max(width, i.what.size());
  for (const PlanItem& i : items) out += fmt::format("  {:<{}}  {:>11}  {}\n", i.what, width, human_bytes(i.bytes), i.detail);
  out += fmt::format("  {:<{}}  {:>11}{}\n", "total", width, human_bytes(total),
                     host_total ? "  (the backend's memory; the system RAM items apart)" : "");
  const bool device_fits = budget == 0 || total <= budget;
  if (budget == 0)
    out += fmt::format("  memory available: unknown ({}); nothing is refused\n", budget_source);
  else
    out += fmt::format("  memory available: {} ({}): {}\n", human_bytes(budget), budget_source,
                       device_fits ? fmt::format("fits, {} left", human_bytes(budget - total))
                                   : fmt::format("does NOT fit, {} short", human_bytes(total - budget)));
  if (host_total) {
    if (host_budget == 0)
      out += fmt::format("  system RAM: {} planned; the machine's RAM is not checked (planned without the device)\n",
                         human_bytes(host_total));
    else
      out += fmt::format("  system RAM: {} of {}: {}\n", human_bytes(host_total), human_bytes(host_budget),
                         host_total <= host_budget ? "fits" : fmt::format("does NOT fit, {} short",
                                                                          human_bytes(host_total - host_budget)));
  }
  for (const std::string& n : not_counted) out += "  not counted: " + n + "\n";
  for (const std::string& a : advice) out += "  - " + a + "\n";
  return out;
}

std::string MemoryPlan::items_text() const {
  std::string out;
  for (const PlanItem& i : items) {
    if (i.bytes == 0 || i.host) continue;  // the backend memory's items: they add up to total
    out += (out.empty() ? "" : " + ") + i.what + " " + human_bytes(i.bytes);
  }
  return out;
}

std::string MemoryPlan::summary() const {
  std::string out = choice.empty() ? "" : "(--profile auto: " + choice + ") ";
  out += items_text() + " = " + human_bytes(total);
  if (budget > 0) out += " of " + human_bytes(budget) + " (" + budget_source + ")";
  if (host_total) out += fmt::format("; in system RAM besides: {}", human_bytes(host_total));
  if (!not_counted.empty()) out += "; not counted: " + not_counted.front();
  return out;
}

Expected<MemoryPlan> plan_memory(const PlanRequest& r) {
  if (!r.kv || !r.backend) return Status(Errc::invalid_argument, "memory plan: no KV store or backend");
  if (r.parallel == 0) return Status(Errc::invalid_argument, "memory plan: parallel must be at least 1");
  MemoryPlan plan;
  plan.budget = r.budget;
  plan.budget_source = r.budget_source;
  plan.host_budget = r.host_budget;
  plan.parallel = r.parallel;
  plan.not_counted = r.not_counted;
  plan.context = r.context;
  plan.context_limit = r.context_limit;
  plan.kv = r.kv_label;
  const Fixed fixed = fixed_items(r);
  if (r.context == 0) {
    plan.context_auto = true;
    if (r.budget == 0)
      return Status(Errc::invalid_argument,
                    "context size \"auto\" needs to know the memory available, which " + r.budget_source +
                        " does not report; give a size (--ctx N) or the memory (graft plan --memory)");
    const char* fixed_what = r.drafters.empty() ? "the weights, state and workspaces" : "the weights, state, workspaces and drafters";
    if (fixed.bytes >= r.budget)
      return Status(Errc::out_of_memory, fmt::format("no context fits: {} alone take {} of the {} available ({})", fixed_what,
                                                     human_bytes(fixed.bytes), human_bytes(r.budget), r.budget_source));
    auto ctx = largest_context(r, fixed.bytes, r.context_limit);
    if (!ctx) return ctx.status();
    if (*ctx < 16)
      return Status(Errc::out_of_memory,
                    fmt::format("no context fits: {} left after {} hold fewer than 16 tokens of KV cache ({} "
                                "sequences)",
                                human_bytes(r.budget - fixed.bytes), fixed_what, r.parallel));
    plan.context = *ctx;
  }
  auto growing = growing_items(r, plan.context);
  if (!growing) return growing.status();
  plan.kv_per_token = r.kv->bytes_per_token(r.params.kv_geometry(std::max<std::uint32_t>(plan.context, 1)));
  plan.items = fixed.items;
  if (plan.context_auto) growing->items.front().detail += " (the largest context that fits)";
  plan.items.insert(plan.items.begin() + 1, growing->items.begin(), growing->items.end());
  plan.total = sat_add(fixed.bytes, growing->device);
  plan.host_total = growing->host;

  if (!plan.fits()) {
    auto ctx = largest_context(r, fixed.bytes, std::max(plan.context, r.context_limit));
    if (!ctx) return ctx.status();
    if (*ctx >= 16)
      plan.advice.push_back(fmt::format("a context of at most {0} tokens fits (--ctx {0} or --ctx auto)", *ctx));
    else
      plan.advice.push_back(fmt::format("the weights, state and workspaces alone take {}: a smaller model file "
                                        "(a lower-bit quantization) or a machine with more memory",
                                        human_bytes(fixed.bytes)));
    if (r.parallel > 1) {
      std::uint32_t seqs = 0;  // the most sequences of this context that fit
      for (std::uint32_t n = r.parallel - 1; n >= 1 && seqs == 0; --n) {
        PlanRequest fewer = r;
        fewer.parallel = n;
        auto fewer_fits = context_fits(fewer, fixed_items(fewer).bytes, plan.context);
        if (!fewer_fits) return fewer_fits.status();
        if (*fewer_fits) seqs = n;
      }
      plan.advice.push_back(seqs > 0 ? fmt::format("at most {} sequences of {} tokens fit (--parallel {})", seqs,
                                                   plan.context, seqs)
                                     : fmt::format("not one sequence of {} tokens fits", plan.context));
    }
    plan.advice.push_back("a smaller KV cache type: -ctk q8_0 -ctv q8_0 halves an f16 cache, -ctk q8_0 -ctv tq3 "
                          "takes 38% of it (the quant store, docs/kvstores.md)");
  }
  return plan;
}

std::string kv_label(const PluginChoice& kv) {
  const auto type = [&](const char* key) { return kv.config.get_string(key).value_or("f16"); };
  if (kv.name == "device") return "device " + type("type");
  if (kv.name == "quant") return "quant " + type("type_k") + "/" + type("type_v");
  if (kv.name == "sysram") {
    const std::string mode = kv.config.get_string("mode").value_or("exact");
    return "sysram " + mode + " " + type("type") + (mode == "exact" ? "" : " (LOSSY: not every token is attended)");
  }
  return kv.name;
}


}  // namespace graft
