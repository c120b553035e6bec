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

// The items that do not grow with the context, and the bytes per token of context (all sequences).
struct Split {
  std::vector<PlanItem> fixed;
  std::uint64_t per_token = 0;   // one sequence's KV bytes per token
  std::uint64_t fixed_bytes = 0;
};

Split fixed_items(const PlanRequest& r, std::uint32_t context) {
  Split s;
  const WeightsPlan& w = r.weights;
  const std::uint64_t resident = w.file_bytes - std::min(w.file_bytes, w.released_bytes) + w.prepared_bytes;
  s.fixed.push_back({"weights", resident,
                     fmt::format("file {}, copies made at load {}, file pages given back {}", human_bytes(w.file_bytes),
                                 human_bytes(w.prepared_bytes), human_bytes(w.released_bytes))});
  if (r.weights.needs.delta_net) {
    const std::uint64_t state = RecurrentState::bytes_for(r.params, r.max_tree_rows);
    s.fixed.push_back({"recurrent state", sat_mul(state, r.parallel),
                       fmt::format("{} per sequence (with {} kept tree rows) x {}", human_bytes(state),
                                   r.max_tree_rows, r.parallel)});
    if (r.state_checkpoints > 0) {
      const std::uint64_t one = RecurrentState::bytes_for(r.params, 0);
      s.fixed.push_back({"state checkpoints", sat_mul(sat_mul(one, r.state_checkpoints), r.parallel),
                         fmt::format("up to {} of {} per sequence x {}", r.state_checkpoints, human_bytes(one),
                                     r.parallel)});
    }
  }
  const std::uint64_t ws = Workspace::bytes_for(r.params, r.weights.needs, r.max_batch, r.graphs);
  const std::uint32_t workspaces = r.shared_workspace ? 1 : r.parallel;
  s.fixed.push_back({"workspace", sat_mul(ws, workspaces),
                     fmt::format("activations of {} rows per pass{}", r.max_batch,
                                 workspaces > 1 ? fmt::format(" x {}", workspaces) : std::string())});
  for (const PlanItem& i : s.fixed) s.fixed_bytes = sat_add(s.fixed_bytes, i.bytes);
  s.per_token = r.kv->bytes_per_token(r.params.kv_geometry(std::max<std::uint32_t>(context, 1)));
  return s;
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
  out += fmt::format("  {:<{}}  {:>11}\n", "total", width, human_bytes(total));
  if (budget == 0)
    out += fmt::format("  memory available: unknown ({}); nothing is refused\n", budget_source);
  else
    out += fmt::format("  memory available: {} ({}): {}\n", human_bytes(budget), budget_source,
                       fits() ? fmt::format("fits, {} left", human_bytes(budget - total))
                              : fmt::format("does NOT fit, {} short", human_bytes(total - budget)));
  for (const std::string& n : not_counted) out += "  not counted: " + n + "\n";
  for (const std::string& a : advice) out += "  - " + a + "\n";
  return out;
}

std::string MemoryPlan::items_text() const {
  std::string out;
  for (const PlanItem& i : items) {
    if (i.bytes == 0) continue;
    out += (out.empty() ? "" : " + ") + i.what + " " + human_bytes(i.bytes);
  }
  return out;
}

std::string MemoryPlan::summary() const {
  std::string out = choice.empty() ? "" : "(--profile auto: " + choice + ") ";
  out += items_text() + " = " + human_bytes(total);
  if (budget > 0) out += " of " + human_bytes(budget) + " (" + budget_source + ")";
  if (!not_counted.empty()) out += "; not counted: " + not_counted.front();
  return out;
}

Expected<MemoryPlan> plan_memory(const PlanRequest& r) {
  if (!r.kv) return Status(Errc::invalid_argument, "memory plan: no KV store");
  if (r.parallel == 0) return Status(Errc::invalid_argument, "memory plan: parallel must be at least 1");
  MemoryPlan plan;
  plan.budget = r.budget;
  plan.budget_source = r.budget_source;
  plan.parallel = r.parallel;
  plan.not_counted = r.not_counted;
  plan.context = r.context;
  plan.context_limit = r.context_limit;
  plan.kv = r.kv_label;
  Split s = fixed_items(r, r.context ? r.context : r.context_limit);
  const std::uint64_t per_token_all = sat_mul(s.per_token, r.parallel);
  if (r.context == 0) {
    plan.context_auto = true;
    if (r.budget == 0)
      return Status(Errc::invalid_argument,
                    "context size \"auto\" needs to know the memory available, which " + r.budget_source +
                        " does not report; give a size (--ctx N) or the memory (graft plan --memory)");
    if (s.fixed_bytes >= r.budget)
      return Status(Errc::out_of_memory,
                    fmt::format("no context fits: the weights, state and workspaces alone take {} of the {} "
                                "available ({})",
                                human_bytes(s.fixed_bytes), human_bytes(r.budget), r.budget_source));
    const std::uint64_t room = r.budget - s.fixed_bytes;
    std::uint64_t ctx = per_token_all ? room / per_token_all : r.context_limit;
    ctx = round_context(std::min<std::uint64_t>(ctx, r.context_limit));
    if (ctx < 16)
      return Status(Errc::out_of_memory,
                    fmt::format("no context fits: {} left after the weights, state and workspaces hold fewer than 16 "
                                "tokens of KV cache ({} per token x {} sequences)",
                                human_bytes(room), human_bytes(s.per_token), r.parallel));
    plan.context = static_cast<std::uint32_t>(ctx);
  }
  plan.kv_per_token = s.per_token;
  const std::uint64_t kv = sat_mul(per_token_all, plan.context);
  plan.items = s.fixed;
  plan.items.insert(plan.items.begin() + 1,
                    PlanItem{"KV cache", kv,
                             fmt::format("{}: {} per token x {} tokens{}{}", r.kv_label, human_bytes(s.per_token),
                                         plan.context, r.parallel > 1 ? fmt::format(" x {} sequences", r.parallel) : "",
                                         plan.context_auto ? " (the largest context that fits)" : "")});
  plan.total = sat_add(s.fixed_bytes, kv);

  if (!plan.fits()) {
    const std::uint64_t room = r.budget > s.fixed_bytes ? r.budget - s.fixed_bytes : 0;
    const std::uint64_t ctx = round_context(per_token_all ? room / per_token_all : 0);
    if (ctx >= 16)
      plan.advice.push_back(fmt::format("a context of at most {0} tokens fits (--ctx {0} or --ctx auto)", ctx));
    else
      plan.advice.push_back(fmt::format("the weights, state and workspaces alone take {}: a smaller model file "
                                        "(a lower-bit quantization) or a machine with more memory",
                                        human_bytes(s.fixed_bytes)));
    if (r.parallel > 1) {
      const std::uint64_t seqs = per_token_all && plan.context ? room / sat_mul(s.per_token, plan.context) : 0;
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
  return kv.name;
}

Expected<std::uint64_t> parse_byte_size(std::string_view text) {
  auto bad = [&] {
    return Status(Errc::invalid_argument, "'" + std::string(text) +
                                              "' is not a size: a number with an optional unit, e.g. 16GiB, 512MiB, "
                                              "1.5G (K, M, G, T: powers of 1024)");
  };
  std::string_view t = text;
  while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
  if (ec != std::errc() || !std::isfinite(value) || value < 0) return bad();
  std::string unit(end, t.data() + t.size());
  std::erase(unit, ' ');
  for (char& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  double scale = 1;
  if (unit.empty() || unit == "b") scale = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") scale = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") scale = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") scale = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") scale = 1024.0 * 1024 * 1024 * 1024;
  else return bad();
  const double bytes = value * scale;
  if (bytes >= 1.8e19 || bytes < 1) return bad();
  return static_cast<std::uint64_t>(bytes);
}

}  // namespace graft
