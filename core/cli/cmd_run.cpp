// graft run: stream generated text to stdout, stats to stderr; --json for exact comparisons.
#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <nlohmann/json.hpp>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/run_support.hpp"
#include "tokenizer/tokenizer.hpp"

namespace graft::cli {

int cmd_run(const Args& args) {
  po::options_description desc("graft run [options]");
  desc.add_options()("help,h", "show this help")(
      "prompt-ids", po::value<std::string>()->value_name("IDS"), "raw prompt token ids, e.g. \"1 15043 3186\" (no BOS added)")(
      "json", "print one JSON object (generated_ids, text, stats) instead of streaming text")(
      "batch,b", po::value<std::int64_t>()->value_name("N")->default_value(256), "prompt tokens per forward pass")(
      "no-bos", "do not add the vocabulary's BOS token to a text prompt")(
      "stop", po::value<std::vector<std::string>>()->value_name("TEXT")->composing(),
      "stop when the output contains TEXT (not printed; repeatable)")(
      "spec-trace", po::value<std::string>()->value_name("FILE"),
      "with speculative decoding: one JSON line per round into FILE (who was asked, what each proposed and would "
      "have had accepted alone, verified nodes, times)");
  int exit_code = 0;
  auto parsed = parse_command("run", args, desc, exit_code);
  if (!parsed) return exit_code;
  auto& vm = parsed->vm;
  auto* profile = &parsed->profile;
  const std::int64_t batch = vm["batch"].as<std::int64_t>();
  if (batch < 1 || batch > 65536) {
    std::fprintf(stderr, "graft run: command line: --batch: %lld is out of range: must be in 1..65536\n",
                 static_cast<long long>(batch));
    return 2;
  }
  if (vm.count("prompt-ids") && (vm.count("prompt") || vm.count("prompt-file"))) {
    std::fprintf(stderr, "graft run: command line: --prompt-ids cannot be combined with --prompt or --prompt-file\n");
    return 2;
  }

  auto pipeline = build_pipeline(*profile, static_cast<std::uint32_t>(batch));
  if (!pipeline) {
    std::fprintf(stderr, "graft run: %s\n", pipeline.status().message().c_str());
    return 1;
  }
  Pipeline& p = **pipeline;
  const Tokenizer& tok = p.tokenizer();

  std::vector<TokenId> prompt;
  if (vm.count("prompt-ids")) {
    auto ids = parse_prompt_ids(vm["prompt-ids"].as<std::string>(), tok.n_vocab());
    if (!ids) {
      std::fprintf(stderr, "graft run: %s\n", ids.status().message().c_str());
      return 2;
    }
    prompt = std::move(*ids);
  } else {
    TokenizeOptions opt;
    opt.add_special = !vm.count("no-bos");
    opt.parse_special = true;  // chat markup such as <|im_start|> in a prompt means the token
    auto ids = tok.encode(profile->prompt, opt);
    if (!ids) {
      std::fprintf(stderr, "graft run: %s\n", ids.status().message().c_str());
      return 1;
    }
    prompt = std::move(*ids);
  }
  if (prompt.empty()) {
    std::fprintf(stderr, "graft run: the prompt is empty: pass --prompt TEXT, --prompt-file FILE or --prompt-ids IDS\n");
    return 2;
  }

  auto session = p.new_session();
  if (!session) {
    std::fprintf(stderr, "graft run: %s\n", session.status().message().c_str());
    return 1;
  }
  // Speculation, when the profile or --draft asks for it: drafters of this session's own.
  auto made = speculative_decoder(p);
  if (!made) {
    std::fprintf(stderr, "graft run: %s\n", made.status().message().c_str());
    return 1;
  }
  std::unique_ptr<SpeculativeDecoder> decoder = std::move(*made);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> trace(nullptr, std::fclose);
  if (vm.count("spec-trace")) {
    const std::string path = vm["spec-trace"].as<std::string>();
    if (!decoder) {
      std::fprintf(stderr, "graft run: --spec-trace needs speculative decoding (--draft LIST)\n");
      return 2;
    }
    trace.reset(std::fopen(path.c_str(), "w"));
    if (!trace) {
      std::fprintf(stderr, "graft run: cannot write the trace file %s: %s\n", path.c_str(), std::strerror(errno));
      return 1;
    }
    decoder->trace_to(trace.get());
  }
  Session& s = **session;
  const bool json = vm.count("json") > 0;
  GenerationOptions gen;
  gen.max_tokens = profile->max_tokens;
  gen.sampling = profile->sampling;
  if (vm.count("stop")) gen.stop = vm["stop"].as<std::vector<std::string>>();
  if (!json && !vm.count("prompt-ids")) {
    std::fputs(profile->prompt.c_str(), stdout);
    std::fflush(stdout);
  }
  std::vector<TokenId> generated;
  GenerationStats stats;
  Status st = s.generate(prompt, gen,
                         [&](TokenId id, std::string_view text) {
                           generated.push_back(id);
                           if (!json) {
                             std::fwrite(text.data(), 1, text.size(), stdout);
                             std::fflush(stdout);
                           }
                           return true;
                         },
                         stats, decoder.get());
  if (!json) {
    std::fputs(s.tail().c_str(), stdout);
    std::fputc('\n', stdout);
  }
  if (!st.ok()) {
    std::fprintf(stderr, "graft run: %s\n", st.message().c_str());
    return 1;
  }
  if (decoder)
    if (Status saved = decoder->save_policy(); !saved.ok()) std::fprintf(stderr, "graft run: warning: %s\n", saved.message().c_str());
  const Sampler& sampler = *s.sampler();
  const std::string& text = s.text();

  const MemoryReport mem = p.memory(s);
  if (json) {
    nlohmann::json o = {
        {"prompt_ids", prompt},
        {"generated_ids", generated},
        {"text", text},
        {"stop_reason", finish_reason_name(stats.stop)},
        {"seed", sampler.seed()},
        {"stats",
         {{"load_seconds", p.load_seconds()},
          {"prompt_tokens", stats.prompt_tokens},
          {"generated_tokens", stats.generated_tokens},
          {"prefill_seconds", stats.prefill_seconds},
          {"decode_seconds", stats.decode_seconds},
          {"prefill_tokens_per_second", stats.prefill_tps()},
          {"decode_tokens_per_second", stats.decode_tps()},
          {"kv_cache", kv_label(p.profile().kv)},
          {"memory_bytes",
           {{"weights", mem.weights}, {"kv", mem.kv}, {"recurrent_state", mem.state}, {"scratch", mem.scratch}, {"prepared_weights", mem.prepared},
            {"released_file_weights", mem.released}}},
          {"memory_plan",
           {{"total_bytes", p.memory_plan().total},
            {"weights_bytes", p.memory_plan().item("weights")->bytes},
            {"budget_bytes", p.memory_plan().budget},
            {"system_ram_bytes", p.memory_plan().host_total},
            {"context", p.memory_plan().context},
            {"context_auto", p.memory_plan().context_auto}}}}}};
    if (decoder) o["stats"]["speculative"] = to_json(decoder->stats());
    std::puts(o.dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  }
  std::fprintf(stderr,
               "\nload %.2f s | prompt %u tokens, %.1f tok/s | generated %u tokens, %.1f tok/s | stop: %s | seed %llu\n"
               "memory: weights %s (copies made at load %s, file pages released %s), kv %s (%s)%s, scratch %s\n",
               p.load_seconds(), stats.prompt_tokens, stats.prefill_tps(), stats.generated_tokens, stats.decode_tps(),
               finish_reason_name(stats.stop), static_cast<unsigned long long>(sampler.seed()),
               human_bytes(mem.weights).c_str(), human_bytes(mem.prepared).c_str(), human_bytes(mem.released).c_str(),
               human_bytes(mem.kv).c_str(), kv_label(p.profile().kv).c_str(),
               mem.state ? (", recurrent state " + human_bytes(mem.state)).c_str() : "", human_bytes(mem.scratch).c_str());
  if (decoder) std::fputs(format_stats(decoder->stats()).c_str(), stderr);
  return 0;
}

}  // namespace graft::cli
