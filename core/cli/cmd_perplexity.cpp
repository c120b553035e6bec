// graft perplexity: llama.cpp's method, so the numbers are comparable. Tokenize the whole text
// (BOS first when the vocabulary adds one), cut non-overlapping ctx-token chunks, put BOS at the
// start of each chunk when the vocabulary adds BOS, evaluate each chunk from an empty cache, and
// score the second half: -log p(token i+1 | logits at i) for i in [ctx/2, ctx-2].
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "cli/run_support.hpp"

namespace graft::cli {

namespace {

// log softmax(logits)[target], max-subtracted, accumulated in double.
double log_prob(const float* logits, std::size_t n, TokenId target) {
  float mx = logits[0];
  for (std::size_t i = 1; i < n; ++i) mx = std::max(mx, logits[i]);
  double sum = 0;
  for (std::size_t i = 0; i < n; ++i) sum += std::exp(double(logits[i]) - mx);
  return double(logits[target]) - mx - std::log(sum);
}

}  // namespace

int cmd_perplexity(const Args& args) {
  po::options_description desc("graft perplexity --model M --file TEXT --ctx N [options]");
  desc.add_options()("help,h", "show this help")("file", po::value<std::string>()->value_name("TEXT"), "text file to score")(
      "chunks", po::value<std::int64_t>()->value_name("K")->default_value(-1), "score at most K chunks (-1: all)")(
      "batch,b", po::value<std::int64_t>()->value_name("N")->default_value(512), "tokens per forward pass");
  int exit_code = 0;
  auto parsed = parse_command("perplexity", args, desc, exit_code);
  if (!parsed) return exit_code;
  auto& vm = parsed->vm;
  auto* profile = &parsed->profile;
  if (!vm.count("file")) {
    std::fprintf(stderr, "graft perplexity: missing --file TEXT\n");
    return 2;
  }
  if (profile->context == 0) {  // the chunk length is the measurement's, not memory's to pick
    std::fprintf(stderr, "graft perplexity: %s: context size \"auto\" does not apply: give the chunk length, --ctx N\n",
                 profile->where("context.size").c_str());
    return 2;
  }
  const std::int64_t ctx = profile->context, batch = vm["batch"].as<std::int64_t>();
  const std::int64_t max_chunks = vm["chunks"].as<std::int64_t>();
  if (batch < 1 || batch > 65536) {
    std::fprintf(stderr, "graft perplexity: command line: --batch: must be in 1..65536\n");
    return 2;
  }
  const std::string path = vm["file"].as<std::string>();
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "graft perplexity: %s: cannot open\n", path.c_str());
    return 1;
  }
  std::stringstream ss;
  ss << in.rdbuf();

  auto pipeline = build_pipeline(*profile, static_cast<std::uint32_t>(std::min(batch, ctx)));
  if (!pipeline) {
    std::fprintf(stderr, "graft perplexity: %s\n", pipeline.status().message().c_str());
    return 1;
  }
  Pipeline& p = **pipeline;
  const Tokenizer& tok = p.tokenizer();
  TokenizeOptions opt;
  opt.add_special = true;  // BOS exactly when the vocabulary adds one
  auto tokens = tok.encode(ss.str(), opt);
  if (!tokens) {
    std::fprintf(stderr, "graft perplexity: %s\n", tokens.status().message().c_str());
    return 1;
  }
  std::int64_t n_chunks = static_cast<std::int64_t>(tokens->size()) / ctx;
  if (max_chunks >= 0) n_chunks = std::min(n_chunks, max_chunks);
  if (n_chunks < 1) {
    std::fprintf(stderr, "graft perplexity: %s has %zu tokens, fewer than one chunk of --ctx %lld\n", path.c_str(),
                 tokens->size(), static_cast<long long>(ctx));
    return 1;
  }
  std::fprintf(stderr, "%zu tokens, %lld chunks of %lld, scoring positions %lld..%lld of each\n", tokens->size(),
               static_cast<long long>(n_chunks), static_cast<long long>(ctx), static_cast<long long>(ctx / 2),
               static_cast<long long>(ctx - 2));

  const bool add_bos = tok.add_bos() && tok.bos() >= 0;
  const std::size_t n_vocab = p.model().params().n_vocab;
  auto session = p.new_session();
  if (!session) {
    std::fprintf(stderr, "graft perplexity: %s\n", session.status().message().c_str());
    return 1;
  }
  Session& s = **session;
  double nll = 0, nll2 = 0;
  std::size_t count = 0;
  for (std::int64_t c = 0; c < n_chunks; ++c) {
    std::vector<TokenId> chunk(tokens->begin() + c * ctx, tokens->begin() + (c + 1) * ctx);
    if (add_bos) chunk[0] = tok.bos();
    Status st = s.reset();
    if (st.ok()) st = s.append(chunk, /*all_logits=*/true);
    if (!st.ok()) {
      std::fprintf(stderr, "graft perplexity: %s\n", st.message().c_str());
      return 1;
    }
    for (std::int64_t i = ctx / 2; i <= ctx - 2; ++i) {
      // Score against the original text: the BOS substitution only affects position 0.
      const TokenId target = (*tokens)[c * ctx + i + 1];
      const double lp = log_prob(s.logits().data() + i * n_vocab, n_vocab, target);
      nll -= lp;
      nll2 += lp * lp;
      ++count;
    }
    std::printf("[%lld]%.4f,", static_cast<long long>(c + 1), std::exp(nll / count));
    std::fflush(stdout);
  }
  const double mean = nll / count;
  const double ppl = std::exp(mean);
  double var = nll2 / count - mean * mean;
  std::printf("\nFinal estimate: PPL = %.4f", ppl);
  if (var > 0 && count > 1) std::printf(" +/- %.5f", ppl * std::sqrt(var / (count - 1)));
  std::printf("\n");
  return 0;
}

}  // namespace graft::cli
