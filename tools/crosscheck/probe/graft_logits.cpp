// graft_logits: graft's logits along a fixed token path, the way `graft run` computes them, for
// the cross-check's investigation of greedy mismatches (not part of graft; built against a graft
// build tree by build_probe.sh).
//
//   graft_logits --model F --prompt-ids "1 2 3" [--continue-ids "4 5"] [--top K] [--full] [--all]
//                [-b 256] [-t 2] [--plugin-dir DIR] [any graft profile flag]
//
// Prefills the prompt in batches of -b tokens (logits of the last token only), then forwards each
// --continue-ids token alone, as graft's generator does after sampling it. So row j (j = 0 ..
// len(continue)) holds the logits graft run would sample from at generated position j when its
// first j generated tokens are continue[0..j-1]. --all: one row per prompt token instead of the
// last one only (the prefill's all-logits mode, as `graft perplexity` uses), then the continuation
// rows. Prints one JSON object:
//   {"rows": [{"top": [[id, logit], ...]}, ...]}     (--full adds "log_softmax": [n_vocab values])
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <numeric>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/run_support.hpp"
#include "engine/pipeline.hpp"

using namespace graft;
using namespace graft::cli;

int main(int argc, char** argv) {
  po::options_description desc("graft_logits --model F --prompt-ids IDS [options]");
  desc.add_options()("help,h", "show this help")("prompt-ids", po::value<std::string>(), "prompt ids (no BOS added)")(
      "continue-ids", po::value<std::string>()->default_value(""), "ids forwarded one at a time after the prompt")(
      "top", po::value<int>()->default_value(2), "top-K logits per row")("full", "also print log_softmax rows")(
      "all", "a row for every prompt token, not just the last")(
      "batch,b", po::value<std::int64_t>()->default_value(256), "prompt tokens per forward pass");
  add_profile_options(desc);
  Args args(argv + 1, argv + argc);
  auto vm = parse_options(args, desc);
  if (!vm) {
    std::fprintf(stderr, "graft_logits: %s\n", vm.status().message().c_str());
    return 2;
  }
  if (vm->count("help") || !vm->count("prompt-ids")) {
    std::cout << desc << "\n";
    return vm->count("help") ? 0 : 2;
  }
  auto profile = load_profile_with_overrides(*vm);
  if (!profile) {
    std::fprintf(stderr, "graft_logits: %s\n", profile.status().message().c_str());
    return 1;
  }
  const auto batch = static_cast<std::uint32_t>((*vm)["batch"].as<std::int64_t>());
  auto pipeline = build_pipeline(*profile, batch);
  if (!pipeline) {
    std::fprintf(stderr, "graft_logits: %s\n", pipeline.status().message().c_str());
    return 1;
  }
  Pipeline& p = **pipeline;
  const std::size_t n_vocab = p.model().params().n_vocab;
  auto prompt = parse_prompt_ids((*vm)["prompt-ids"].as<std::string>(), n_vocab);
  if (!prompt) {
    std::fprintf(stderr, "graft_logits: %s\n", prompt.status().message().c_str());
    return 2;
  }
  std::vector<TokenId> cont;
  if (const auto c = (*vm)["continue-ids"].as<std::string>(); !c.empty()) {
    auto ids = parse_prompt_ids(c, n_vocab);
    if (!ids) {
      std::fprintf(stderr, "graft_logits: %s\n", ids.status().message().c_str());
      return 2;
    }
    cont = std::move(*ids);
  }
  const int top = std::max(1, (*vm)["top"].as<int>());
  const bool full = vm->count("full") > 0;
  const bool all = vm->count("all") > 0;

  nlohmann::json rows = nlohmann::json::array();
  auto emit = [&](const float* logits) {
    std::vector<TokenId> order(n_vocab);
    std::iota(order.begin(), order.end(), 0);
    // Best first, lowest id on ties (graft's greedy rule).
    std::stable_sort(order.begin(), order.end(), [&](TokenId a, TokenId b) { return logits[a] > logits[b]; });
    nlohmann::json row;
    row["top"] = nlohmann::json::array();
    for (int k = 0; k < top && k < static_cast<int>(n_vocab); ++k) row["top"].push_back({order[k], logits[order[k]]});
    if (full) {
      const float mx = logits[order[0]];
      double sum = 0;
      for (std::size_t i = 0; i < n_vocab; ++i) sum += std::exp(double(logits[i]) - mx);
      const double lse = mx + std::log(sum);
      std::vector<double> ls(n_vocab);
      for (std::size_t i = 0; i < n_vocab; ++i) ls[i] = double(logits[i]) - lse;
      row["log_softmax"] = ls;
    }
    rows.push_back(std::move(row));
  };

  auto fail = [](const Status& st) {
    std::fprintf(stderr, "graft_logits: %s\n", st.message().c_str());
    return 1;
  };
  auto session = p.new_session();
  if (!session) return fail(session.status());
  Session& s = **session;
  if (Status st = s.append(*prompt, all); !st.ok()) return fail(st);
  for (std::size_t i = 0; i < (all ? prompt->size() : 1); ++i) emit(s.logits().data() + i * n_vocab);
  for (TokenId t : cont) {
    if (Status st = s.append(std::span<const TokenId>(&t, 1)); !st.ok()) return fail(st);
    emit(s.logits().data());
  }
  std::puts(nlohmann::json{{"rows", rows}}.dump().c_str());
  return 0;
}
