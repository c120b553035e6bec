// graft bench: prefill and decode speed, and decode's achieved read bandwidth as a fraction of
// the machine's read bandwidth measured in the same run with the same thread count (on a GPU, the
// device's copy bandwidth).
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <optional>
#include <nlohmann/json.hpp>
#include <random>

#include "bench/device_bandwidth.hpp"
#include "bench/read_bandwidth.hpp"
#include "bench/session_speed.hpp"
#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/run_support.hpp"

namespace graft::cli {

namespace {

struct Rep {
  double prefill_tps = 0, decode_tps = 0;
};

double mean(const std::vector<double>& v) {
  double s = 0;
  for (double x : v) s += x;
  return v.empty() ? 0 : s / v.size();
}
double stddev(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  const double m = mean(v);
  double s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return std::sqrt(s / (v.size() - 1));
}

}  // namespace

int cmd_bench(const Args& args) {
  po::options_description desc("graft bench --model M [options]");
  desc.add_options()("help,h", "show this help")(
      "prompt-tokens", po::value<std::int64_t>()->value_name("N")->default_value(256), "prefill length")(
      "gen-tokens", po::value<std::int64_t>()->value_name("N")->default_value(64), "decode length")(
      "reps", po::value<std::int64_t>()->value_name("N")->default_value(3), "repetitions")(
      "batch,b", po::value<std::int64_t>()->value_name("N")->default_value(256), "prompt tokens per forward pass")(
      "bandwidth-mib", po::value<std::int64_t>()->value_name("N")->default_value(1024), "buffer for the bandwidth probe")(
      "json", "print the results as one JSON object")(
      "verify-cost", po::value<std::int64_t>()->value_name("N")->default_value(0),
      "also time verify passes of 1..N rows after the prompt (speculative decoding's cost, as multiples of one "
      "decode step)");
  int exit_code = 0;
  auto parsed = parse_command("bench", args, desc, exit_code);
  if (!parsed) return exit_code;
  auto& vm = parsed->vm;
  auto* profile = &parsed->profile;
  const auto P = vm["prompt-tokens"].as<std::int64_t>(), G = vm["gen-tokens"].as<std::int64_t>();
  const auto reps = vm["reps"].as<std::int64_t>(), batch = vm["batch"].as<std::int64_t>();
  const auto bw_mib = vm["bandwidth-mib"].as<std::int64_t>();
  if (P < 1 || G < 2 || reps < 1 || batch < 1 || bw_mib < 64) {
    std::fprintf(stderr, "graft bench: need --prompt-tokens >= 1, --gen-tokens >= 2, --reps >= 1, --batch >= 1, "
                         "--bandwidth-mib >= 64\n");
    return 2;
  }
  // The lengths asked are the context, past the model's training context too: a context the
  // profile does not set (or sets shorter) becomes their sum.
  if (!profile->locations.count("context.size") || profile->context < P + G) {
    profile->context = P + G;
    profile->locations["context.size"] = "graft bench: --prompt-tokens + --gen-tokens";
  }

  auto pipeline = build_pipeline(*profile, static_cast<std::uint32_t>(std::min(batch, P)));
  if (!pipeline) {
    std::fprintf(stderr, "graft bench: %s\n", pipeline.status().message().c_str());
    return 1;
  }
  Pipeline& p = **pipeline;
  const unsigned threads = p.backend().n_threads();
  // The memory the weights are read from: the host's, or a GPU's own (probed through the backend).
  BandwidthResult bw;
  if (p.backend().host_accessible(MemoryKind::device)) {
    bw = measure_read_bandwidth(threads, std::size_t(bw_mib) << 20);
  } else {
    auto probed = measure_device_bandwidth(p.backend(), std::size_t(bw_mib) << 20);
    if (!probed) {
      std::fprintf(stderr, "graft bench: the device bandwidth probe: %s\n", probed.status().message().c_str());
      return 1;
    }
    bw = *probed;
  }

  // The prompt given (-p, -f), else a deterministic one of ordinary tokens; decode goes on past
  // an end of text.
  std::vector<TokenId> prompt;
  if (!profile->prompt.empty()) {
    TokenizeOptions opt;
    opt.add_special = true;
    opt.parse_special = true;
    auto ids = p.tokenizer().encode(profile->prompt, opt);
    if (!ids) {
      std::fprintf(stderr, "graft bench: %s\n", ids.status().message().c_str());
      return 1;
    }
    prompt = std::move(*ids);
  } else {
    std::mt19937 rng(1234);
    prompt.resize(static_cast<std::size_t>(P));
    for (auto& t : prompt) t = static_cast<TokenId>(rng() % p.model().params().n_vocab);
  }
  auto session = p.new_session();
  if (!session) {
    std::fprintf(stderr, "graft bench: %s\n", session.status().message().c_str());
    return 1;
  }
  Session& s = **session;
  auto made = speculative_decoder(p);
  if (!made) {
    std::fprintf(stderr, "graft bench: %s\n", made.status().message().c_str());
    return 1;
  }
  std::unique_ptr<SpeculativeDecoder> decoder = std::move(*made);
  // Greedy unless a sampling setting is given (a flag or the profile): then the profile's chain.
  const bool sampled = std::any_of(profile->locations.begin(), profile->locations.end(),
                                   [](const auto& kv) { return kv.first.rfind("sampling.", 0) == 0; });
  const SamplingSettings sampling = sampled ? profile->sampling : greedy_sampling();
  const std::string decoding =
      sampling.temperature <= 0
          ? std::string("greedy")
          : fmt::format("sampled (temperature {}, top_k {}, top_p {}, min_p {}, repeat_penalty {}, seed {})",
                        sampling.temperature, sampling.top_k, sampling.top_p, sampling.min_p, sampling.repeat_penalty,
                        sampling.seed);
  auto samples = measure_speed(s, prompt, G, reps, decoder.get(), sampling);
  const auto verify_rows = vm["verify-cost"].as<std::int64_t>();
  std::vector<double> verify;
  if (samples && verify_rows > 0) {
    if (verify_rows > static_cast<std::int64_t>(s.max_batch())) {
      std::fprintf(stderr, "graft bench: --verify-cost %lld exceeds the batch %u\n", static_cast<long long>(verify_rows),
                   s.max_batch());
      return 2;
    }
    auto v = measure_verify_cost(s, prompt, static_cast<std::uint32_t>(verify_rows), std::max<std::int64_t>(reps, 20));
    if (!v) {
      std::fprintf(stderr, "graft bench: %s\n", v.status().message().c_str());
      return 1;
    }
    verify = std::move(*v);
  }
  // A hybrid model: what keeping and restoring its recurrent state costs a round.
  std::optional<StateCost> state_cost;
  if (samples && verify_rows > 0 && s.recurrent()) {
    const auto rows = std::min<std::uint32_t>(static_cast<std::uint32_t>(verify_rows), s.recurrent()->max_pending());
    auto c = measure_state_cost(s, prompt, rows, std::max<std::int64_t>(reps, 20));
    if (!c) {
      std::fprintf(stderr, "graft bench: %s\n", c.status().message().c_str());
      return 1;
    }
    state_cost = std::move(*c);
  }
  if (!samples) {
    std::fprintf(stderr, "graft bench: %s\n", samples.status().message().c_str());
    return 1;
  }
  std::vector<double> prefill, decode;
  for (const SpeedSample& x : *samples) prefill.push_back(x.prefill_tps), decode.push_back(x.decode_tps);

  // Bytes one decode step reads: every weight once, plus the KV of the average context, plus a
  // hybrid model's recurrent state read and written once.
  const MemoryReport mem = p.memory(s);
  const double kv_per_token = double(mem.kv) / p.context();
  const double state_bytes = 2.0 * double(p.model().params().recurrent_state_floats()) * sizeof(float);
  const double bytes_per_step = double(mem.weights) + kv_per_token * (P + G / 2.0) + state_bytes;
  const double achieved = bytes_per_step * mean(decode);
  const double fraction = achieved / bw.bytes_per_second;
  const auto& mp = p.model().params();
  if (vm.count("json")) {
    nlohmann::json o = {{"model", p.file().name()},
                        {"architecture", mp.arch_name},
                        {"threads", threads},
                        {"prompt_tokens", P},
                        {"gen_tokens", G},
                        {"reps", reps},
                        {"decoding", decoding},
                        {"prefill_tokens_per_second", prefill},
                        {"decode_tokens_per_second", decode},
                        {"prefill_mean", mean(prefill)},
                        {"decode_mean", mean(decode)},
                        {"weight_bytes", mem.weights},
                        {"bytes_per_decode_step", bytes_per_step},
                        {"decode_bytes_per_second", achieved},
                        {"read_bandwidth_bytes_per_second", bw.bytes_per_second},
                        {"read_bandwidth_loads", bw.loads},
                        {"decode_fraction_of_bandwidth", fraction},
                        {"prefill_over_decode", mean(prefill) / mean(decode)}};
    if (decoder) o["speculative"] = to_json(decoder->stats());
    if (!verify.empty()) {
      o["verify_seconds"] = verify;
      std::vector<double> ratio;
      for (double t : verify) ratio.push_back(t / verify[0]);
      o["verify_cost_over_decode"] = ratio;
    }
    if (state_cost) {
      std::vector<double> restore, settle;
      for (double t : state_cost->restore_seconds) restore.push_back(t / state_cost->decode_seconds);
      for (double t : state_cost->settle_seconds) settle.push_back(t / state_cost->decode_seconds);
      o["recurrent_state"] = {{"decode_step_seconds", state_cost->decode_seconds},
                              {"tree_row_seconds", state_cost->tree_row_seconds},
                              {"keep_over_decode", (state_cost->tree_row_seconds - state_cost->decode_seconds) /
                                                       state_cost->decode_seconds},
                              {"restore_seconds", state_cost->restore_seconds},
                              {"restore_over_decode", restore},
                              {"settle_seconds", state_cost->settle_seconds},
                              {"settle_over_decode", settle}};
    }
    std::puts(o.dump(2).c_str());
    return 0;
  }
  std::printf("model:      %s (%s, %s of weights read per token)\n", p.file().name().c_str(), mp.arch_name.c_str(),
              human_bytes(mem.weights).c_str());
  std::printf("threads:    %u\n", threads);
  std::printf("prefill:    %.1f +/- %.1f tok/s (%lld tokens, %lld reps)\n", mean(prefill), stddev(prefill),
              static_cast<long long>(P), static_cast<long long>(reps));
  std::printf("decode:     %.2f +/- %.2f tok/s (%lld tokens, %s)\n", mean(decode), stddev(decode),
              static_cast<long long>(G), decoding.c_str());
  std::printf("bandwidth:  decode reads %.2f GB/s = %.1f%% of the measured %.2f GB/s (%u threads, %s buffer, %s loads)\n",
              achieved / 1e9, 100 * fraction, bw.bytes_per_second / 1e9, threads, human_bytes(bw.buffer_bytes).c_str(),
              bw.loads);
  std::printf("ratio:      prefill / decode = %.2f\n", mean(prefill) / mean(decode));
  if (decoder) std::fputs(format_stats(decoder->stats()).c_str(), stdout);
  if (!verify.empty()) {
    std::printf("verify:     rows: cost as multiples of one row (%.3f ms)\n           ", 1e3 * verify[0]);
    for (std::size_t n = 0; n < verify.size(); ++n) std::printf(" %zu: %.2f", n + 1, verify[n] / verify[0]);
    std::printf("\n");
  }
  if (state_cost) {
    const double d = state_cost->decode_seconds;
    std::printf("state:      decode step %.3f ms; a tree row (state kept, its inputs saved) %.3f ms = %+.2f%% of it\n"
                "            restoring a path of n rows (commit, applied by the next pass), %% of a decode step:",
                1e3 * d, 1e3 * state_cost->tree_row_seconds, 100 * (state_cost->tree_row_seconds - d) / d);
    for (std::size_t n = 0; n < state_cost->restore_seconds.size(); ++n)
      std::printf(" %zu: %.2f%%", n + 1, 100 * state_cost->restore_seconds[n] / d);
    std::printf("\n            the same applied alone (commit + settle), %% of a decode step:");
    for (std::size_t n = 0; n < state_cost->settle_seconds.size(); ++n)
      std::printf(" %zu: %.2f%%", n + 1, 100 * state_cost->settle_seconds[n] / d);
    std::printf("\n");
  }
  return 0;
}

}  // namespace graft::cli
