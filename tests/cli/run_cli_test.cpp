// graft run / perplexity / bench through the real binary on a synthetic model.
#include <gtest/gtest.h>

#include <cctype>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "engine/pipeline.hpp"
#include "test_util.hpp"

using namespace graft;

namespace {

class cli_run : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    model_ = (dir_->path() / "m.gguf").string();
    auto r = run_command(std::string(GRAFT_EXE) +
                         " synth --arch qwen3 --n-embd 128 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 256 "
                         "--n-vocab 700 --ctx 512 --tied --type q8_0 --seed 3 --out " + model_);
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  static void TearDownTestSuite() { delete dir_; }

  static CommandResult graft(const std::string& args) {
    return run_command(std::string(GRAFT_EXE) + " " + args, /*merge_stderr=*/false);
  }
  static CommandResult graft_all(const std::string& args) { return run_command(std::string(GRAFT_EXE) + " " + args); }
  // At one SIMD level: which matrices get a layout of their own depends on it (Q8_0: avx2 only).
  static CommandResult graft_at(const std::string& level, const std::string& args, bool merge_stderr = false) {
    return run_command("GRAFT_CPU_SIMD=" + level + " " + std::string(GRAFT_EXE) + " " + args, merge_stderr);
  }

  static inline TempDir* dir_ = nullptr;
  static inline std::string model_;
};

nlohmann::json parse(const CommandResult& r) {
  auto j = nlohmann::json::parse(r.output, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << r.output;
  return j;
}

}  // namespace

TEST_F(cli_run, JsonGreedyIsDeterministicAndCountsTokens) {
  const std::string args = "run --model " + model_ + " --prompt-ids \"5 6 7 8\" --temp 0 -n 12 --json";
  auto a = graft_at("scalar", args), b = graft_at("scalar", args);
  ASSERT_EQ(a.exit_code, 0) << a.output;
  const auto ja = parse(a), jb = parse(b);
  EXPECT_EQ(ja["prompt_ids"], nlohmann::json::parse("[5, 6, 7, 8]"));
  EXPECT_EQ(ja["generated_ids"].size(), 12u);
  EXPECT_EQ(ja["generated_ids"], jb["generated_ids"]);
  EXPECT_EQ(ja["stop_reason"], "length");
  EXPECT_EQ(ja["stats"]["generated_tokens"], 12);
  EXPECT_EQ(ja["stats"]["prompt_tokens"], 4);
  EXPECT_GT(ja["stats"]["memory_bytes"]["weights"].get<double>(), 0);
  // At the scalar level no format has a layout of its own; in this Q8_0 model the copies made at
  // load are the stacked q/k/v and gate/up of its 2 layers (128 x 128 + 2 x 64 x 128 + 2 x 256 x 128
  // weights each, 34 bytes per 32), and the file pages released the whole pages inside those parts.
  ASSERT_TRUE(ja["stats"]["memory_bytes"].contains("prepared_weights")) << ja.dump();
  EXPECT_EQ(ja["stats"]["memory_bytes"]["prepared_weights"].get<double>(), 2 * (128 * 128 + 2 * 64 * 128 + 2 * 256 * 128) / 32 * 34);
  ASSERT_TRUE(ja["stats"]["memory_bytes"].contains("released_file_weights")) << ja.dump();
  EXPECT_EQ(ja["stats"]["memory_bytes"]["released_file_weights"].get<double>(), 164 * 1024);
}

TEST_F(cli_run, StatsGoToStderrAndTextToStdout) {
  auto r = graft_at("scalar", "run --model " + model_ + " --prompt hello -n 4 --seed 5", true);
  ASSERT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("prompt "), std::string::npos);
  EXPECT_NE(r.output.find(" tok/s | generated 4 tokens"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("memory: weights "), std::string::npos) << r.output;
  // The stacked q/k/v and gate/up copies (no layouts of their own at scalar): see the test above.
  EXPECT_NE(r.output.find(" (copies made at load 204.0 KiB, file pages released 164.0 KiB), kv "), std::string::npos)
      << r.output;
}

TEST_F(cli_run, StopStringEndsTheOutputBeforeIt) {
  auto full = parse(graft("run --model " + model_ + " --prompt-ids \"9 10 11\" --temp 0 -n 24 --json"));
  const std::string text = full["text"];
  ASSERT_GE(text.size(), 8u);
  // Two alphanumeric bytes from the second half: safe inside shell quotes.
  std::size_t at = text.size() / 2;
  while (at + 1 < text.size() && !(std::isalnum(static_cast<unsigned char>(text[at])) &&
                                   std::isalnum(static_cast<unsigned char>(text[at + 1]))))
    ++at;
  ASSERT_LT(at + 1, text.size()) << "no alphanumeric pair in " << text;
  const std::string stop = text.substr(at, 2);
  const std::size_t first = text.find(stop);
  auto cut = parse(graft("run --model " + model_ + " --prompt-ids \"9 10 11\" --temp 0 -n 24 --json --stop '" + stop + "'"));
  EXPECT_EQ(cut["text"], text.substr(0, first));
  EXPECT_EQ(cut["stop_reason"], "stop string");
}

TEST_F(cli_run, PromptIdsOutsideTheVocabularyAreRefused) {
  auto r = graft_all("run --model " + model_ + " --prompt-ids \"1 700\" -n 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.output.find("graft run: --prompt-ids: token id 700 is outside the vocabulary (0..699)"), std::string::npos)
      << r.output;
}

TEST_F(cli_run, PromptLongerThanTheContextIsAClearError) {
  std::string ids;
  for (int i = 0; i < 40; ++i) ids += std::to_string(i + 1) + " ";
  auto r = graft_all("run --model " + model_ + " -c 32 --prompt-ids \"" + ids + "\" -n 1");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("graft run: the prompt has 40 tokens but the context holds 32: raise [context] size "
                          "(command line: --ctx) or --ctx"),
            std::string::npos)
      << r.output;
}

TEST_F(cli_run, MissingModelSaysHowToGiveOne) {
  auto r = graft_all("run --prompt hi");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.output.find("graft run: no model: set [model] path in the profile or pass --model FILE"), std::string::npos)
      << r.output;
}

TEST_F(cli_run, PerplexityFollowsTheLlamaCppMethod) {
  // Text of a few hundred tokens; the CLI's estimate must equal an independent computation of
  // exp(mean NLL) over the second half of each chunk.
  const auto text_file = dir_->path() / "t.txt";
  {
    std::ofstream out(text_file);
    for (int i = 0; i < 40; ++i) out << "def f" << i << "(x):\n    return x * " << i << " + 1\n";
  }
  const int ctx = 64;
  auto r = graft("perplexity --model " + model_ + " --file " + text_file.string() + " --ctx 64 --chunks 3");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.output, m, std::regex("Final estimate: PPL = ([0-9.]+) \\+/- ([0-9.]+)"))) << r.output;
  const double cli_ppl = std::stod(m[1]);

  Profile profile = Profile::builtin();
  profile.model = model_;
  profile.context = ctx;
  auto p = Pipeline::build(profile, ctx);
  ASSERT_TRUE(p) << p.status().message();
  std::ifstream in(text_file);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  TokenizeOptions opt;
  opt.add_special = true;
  auto tokens = (*p)->tokenizer().encode(text, opt);
  ASSERT_TRUE(tokens);
  ASSERT_GE(tokens->size(), 3u * ctx);
  auto session = (*p)->new_session();
  ASSERT_TRUE(session) << session.status().message();
  const std::size_t V = (*p)->model().params().n_vocab;
  double nll = 0;
  int count = 0;
  for (int c = 0; c < 3; ++c) {
    std::vector<TokenId> chunk(tokens->begin() + c * ctx, tokens->begin() + (c + 1) * ctx);
    ASSERT_TRUE((*session)->reset().ok());
    ASSERT_TRUE((*session)->append(chunk, /*all_logits=*/true).ok());
    const std::vector<float>& logits = (*session)->logits();
    for (int i = ctx / 2; i <= ctx - 2; ++i) {
      const float* l = logits.data() + i * V;
      double mx = l[0], sum = 0;
      for (std::size_t v = 0; v < V; ++v) mx = std::max(mx, double(l[v]));
      for (std::size_t v = 0; v < V; ++v) sum += std::exp(l[v] - mx);
      nll -= l[chunk[i + 1]] - mx - std::log(sum);
      ++count;
    }
  }
  EXPECT_NEAR(cli_ppl, std::exp(nll / count), 1e-3 * cli_ppl);
}

// llama.cpp's -ctk / -ctv (and --cache-type-k / -v) pick the quant store and its types on every
// command that runs a model: the KV bytes follow the types (q8_0 34, q4_0 18 and tq3 14 bytes per
// 32 elements against f16's 64), the side not given stays f16, a profile naming another store is an
// error at its line, an unknown type names the valid ones.
TEST_F(cli_run, CacheTypeFlagsPickTheQuantStoreAndItsTypes) {
  const std::string base = "run --model " + model_ + " --prompt-ids \"5 6 7\" --temp 0 -n 6 --json";
  auto kv_bytes = [&](const std::string& flags) {
    auto r = graft(base + " " + flags);
    EXPECT_EQ(r.exit_code, 0) << flags << "\n" << r.output;
    return r.exit_code == 0 ? parse(r)["stats"]["memory_bytes"]["kv"].get<double>() : -1.0;
  };
  const double f16 = kv_bytes("");
  ASSERT_GT(f16, 0);
  // The run says which cache it used.
  EXPECT_EQ(parse(graft(base))["stats"]["kv_cache"], "device f16");
  EXPECT_EQ(parse(graft(base + " -ctv q4_0"))["stats"]["kv_cache"], "quant f16/q4_0");
  const auto said = graft_all(base + " -ctk q8_0 -ctv q4_0");
  EXPECT_NE(said.output.find(" KiB (quant q8_0/q4_0), scratch"), std::string::npos) << said.output;
  EXPECT_EQ(kv_bytes("-ctk q8_0 -ctv q8_0"), f16 * 34 / 64);
  EXPECT_EQ(kv_bytes("--cache-type-k q8_0 --cache-type-v q4_0"), f16 * (34 + 18) / 128);
  EXPECT_EQ(kv_bytes("-ctv q4_0"), f16 * (64 + 18) / 128) << "K stays f16";
  EXPECT_EQ(kv_bytes("-ctk f32"), f16 * (128 + 64) / 128);
  EXPECT_EQ(kv_bytes("-ctk q8_0 -ctv tq3"), f16 * (34 + 14) / 128) << "tq3: 14 bytes per 32";
  const auto same = parse(graft(base + " -ctk f16 -ctv f16"));
  EXPECT_EQ(same["generated_ids"], parse(graft(base))["generated_ids"]) << "quant f16/f16 is the device store's f16";
  auto unknown = graft_all(base + " -ctk q5_1");
  EXPECT_EQ(unknown.exit_code, 1);
  EXPECT_NE(unknown.output.find("type_k = \"q5_1\" is not supported; valid types: f16, f32, q8_0, q4_0, tq3"),
            std::string::npos)
      << unknown.output;
  const auto profile = dir_->path() / "device.toml";
  std::ofstream(profile) << "[kv]\nstore = \"device\"\n";
  auto named = graft_all(base + " --profile " + profile.string() + " -ctv q8_0");
  EXPECT_EQ(named.exit_code, 2);
  EXPECT_NE(named.output.find("command line: --cache-type-v: the KV store is 'device' (" + profile.string() +
                              ":2:1); K/V types of their own need store = \"quant\" there"),
            std::string::npos)
      << named.output;
}

TEST_F(cli_run, BenchReportsBandwidthFraction) {
  auto r = graft("bench --model " + model_ + " --prompt-tokens 16 --gen-tokens 4 --reps 1 --bandwidth-mib 64 --json");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto j = parse(r);
  EXPECT_GT(j["decode_mean"].get<double>(), 0);
  EXPECT_GT(j["prefill_mean"].get<double>(), 0);
  EXPECT_GT(j["read_bandwidth_bytes_per_second"].get<double>(), 1e8);
  const std::string loads = j["read_bandwidth_loads"];
  EXPECT_TRUE(loads == "avx512" || loads == "avx512+prefetch" || loads == "avx2" || loads == "scalar") << loads;
  const double frac = j["decode_fraction_of_bandwidth"];
  EXPECT_NEAR(frac, j["decode_bytes_per_second"].get<double>() / j["read_bandwidth_bytes_per_second"].get<double>(), 1e-9);
  EXPECT_EQ(j["decoding"], "greedy") << "no sampling setting given: greedy, whatever the profile's defaults";
  // A sampling setting given: the profile's chain, said in the output.
  auto sampled = graft("bench --model " + model_ +
                       " --prompt-tokens 16 --gen-tokens 4 --reps 1 --bandwidth-mib 64 --temp 0.7 --seed 5 --json");
  ASSERT_EQ(sampled.exit_code, 0) << sampled.output;
  EXPECT_EQ(parse(sampled)["decoding"],
            "sampled (temperature 0.7, top_k 40, top_p 0.95, min_p 0.05, repeat_penalty 1, seed 5)");
}

// Q8_0 at the avx2 level packs every matrix it multiplies by (q8_0_rows4), the tied embedding's
// output copy included, releases the file's pages of them, and gives the scalar level's tokens.
TEST_F(cli_run, Q8_0AtAvx2PreparesEveryMatrixAndKeepsTheTokens) {
#ifdef __x86_64__
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !__builtin_cpu_supports("f16c"))
    GTEST_SKIP() << "no AVX2 + FMA + F16C";
#else
  GTEST_SKIP() << "x86 only";
#endif
  const std::string args = "run --model " + model_ + " --prompt-ids \"5 6 7 8\" --temp 0 -n 12 --json";
  auto packed = graft_at("avx2", args), file = graft_at("scalar", args);
  ASSERT_EQ(packed.exit_code, 0) << packed.output;
  ASSERT_EQ(file.exit_code, 0) << file.output;
  const auto jp = parse(packed), jf = parse(file);
  EXPECT_EQ(jp["generated_ids"], jf["generated_ids"]);
  const auto& m = jp["stats"]["memory_bytes"];
  // 2 layers x (q/k/v 128 x 128 + 2 x 64 x 128, gate/up 2 x 256 x 128, o 128 x 128, down 128 x 256)
  // and the output's 700 x 128, 34 bytes per 32 weights.
  EXPECT_EQ(m["prepared_weights"].get<double>(),
            (2 * (128 * 128 + 2 * 64 * 128 + 2 * 256 * 128 + 128 * 128 + 128 * 256) + 700 * 128) / 32 * 34);
  EXPECT_GT(m["released_file_weights"].get<double>(), jf["stats"]["memory_bytes"]["released_file_weights"].get<double>());
  EXPECT_LE(m["released_file_weights"].get<double>(), m["prepared_weights"].get<double>());
}

// Q4_K, Q5_K and Q2_K models: where the kernels keep their own layout (AVX512-VBMI), the file's pages of
// those matrices are released after load and the greedy tokens are the same as with the file's
// layout (GRAFT_CPU_SIMD=avx2 prepares no layout; the stacked q/k/v and gate/up are copied either way).
TEST_F(cli_run, PreparedKQuantWeightsReleaseTheFilePagesAndKeepTheTokens) {
#ifdef __x86_64__
  const bool prepares = __builtin_cpu_supports("avx512vbmi") && __builtin_cpu_supports("avx512vnni");
#else
  const bool prepares = false;
#endif
  for (const std::string type : {"q4_k", "q5_k", "q2_k"}) {
    SCOPED_TRACE(type);
    const std::string path = (dir_->path() / (type + ".gguf")).string();
    auto s = run_command(std::string(GRAFT_EXE) +
                         " synth --arch llama --n-embd 256 --n-layer 2 --n-head 4 --n-head-kv 2 --n-ff 512 "
                         "--n-vocab 700 --ctx 512 --type " + type + " --seed 5 --out " + path);
    ASSERT_EQ(s.exit_code, 0) << s.output;
    const std::string args = "run --model " + path + " --prompt-ids \"5 6 7 8\" --temp 0 -n 16 --json";
    auto packed = graft(args), file = run_command("GRAFT_CPU_SIMD=avx2 " + std::string(GRAFT_EXE) + " " + args, false);
    ASSERT_EQ(packed.exit_code, 0) << packed.output;
    ASSERT_EQ(file.exit_code, 0) << file.output;
    const auto jp = parse(packed), jf = parse(file);
    EXPECT_EQ(jp["generated_ids"], jf["generated_ids"]);
    const auto& mp = jp["stats"]["memory_bytes"];
    const auto& mf = jf["stats"]["memory_bytes"];
    // The file's layout: the only copies are the stacked q/k/v and gate/up (2 layers x (256 x 256 +
    // 2 x 128 x 256 + 2 x 512 x 256) weights, 3072 blocks of 256), whose parts' pages are released.
    const double block_bytes = type == "q4_k" ? 144 : type == "q5_k" ? 176 : 84;
    EXPECT_EQ(mf["prepared_weights"].get<double>(), 3072 * block_bytes);
    EXPECT_GT(mf["released_file_weights"].get<double>(), 0.5 * mf["prepared_weights"].get<double>());
    EXPECT_LE(mf["released_file_weights"].get<double>(), mf["prepared_weights"].get<double>());
    if (!prepares) continue;
    // Every matrix but the token embeddings (the output is not tied) is prepared; the whole pages
    // inside each of those tensors are released.
    EXPECT_GT(mp["prepared_weights"].get<double>(), 0.8 * mp["weights"].get<double>());
    EXPECT_LE(mp["prepared_weights"].get<double>(), mp["weights"].get<double>());
    EXPECT_GT(mp["released_file_weights"].get<double>(), 0.5 * mp["prepared_weights"].get<double>());
    EXPECT_LE(mp["released_file_weights"].get<double>(), mp["prepared_weights"].get<double>());
  }
  if (!prepares) GTEST_SKIP() << "no AVX512-VBMI: the K-quants keep the file's layout on this CPU (tokens compared)";
}

// graft plan: the memory table and whether it fits (exit 0 / 1), a bad size (2); --ctx auto on a
// run (the largest context that fits: here the model's training context), whose plan is what it
// holds; context.size = "auto" in a profile. (A run that does not fit: exit_codes_test.cpp.)
TEST_F(cli_run, PlanSaysWhatFitsAndRunsRefuseWhatDoesNot) {
  const auto fits = graft_all("plan --model " + model_ + " --ctx 256");
  EXPECT_EQ(fits.exit_code, 0) << fits.output;
  for (const char* line : {"memory plan: ", "context 256, 1 sequence", "\n  weights ", "\n  KV cache ", "\n  workspace ",
                           "\n  total ", ": fits, "})
    EXPECT_NE(fits.output.find(line), std::string::npos) << line << "\n" << fits.output;
  const auto short_of = graft_all("plan --model " + model_ + " --ctx 100000 --memory 1MiB --parallel 2");
  EXPECT_EQ(short_of.exit_code, 1) << short_of.output;
  EXPECT_NE(short_of.output.find("(--memory 1MiB): does NOT fit"), std::string::npos) << short_of.output;
  EXPECT_NE(short_of.output.find("x 100000 tokens x 2 sequences"), std::string::npos) << short_of.output;
  const auto chosen = graft_all("plan --profile auto --model " + model_);
  EXPECT_EQ(chosen.exit_code, 0) << chosen.output;
  EXPECT_TRUE(std::regex_search(chosen.output, std::regex("\n--profile auto: backend (cpu|cuda).*, KV device f16: the "
                                                          "model's whole training context \\(512 tokens\\) fits in ")))
      << chosen.output;
  const auto bad = graft_all("plan --model " + model_ + " --memory lots");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.output.find("graft plan: command line: --memory: 'lots' is not a size"), std::string::npos) << bad.output;

  const std::string run = "run --model " + model_ + " --prompt-ids \"5 6 7\" --temp 0 -n 4 --json";
  auto r = graft(run + " --ctx auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto plan = parse(r)["stats"]["memory_plan"];
  EXPECT_EQ(plan["context"], 512) << "the model's training context, which fits";
  EXPECT_EQ(plan["context_auto"], true);
  const auto mem = parse(r)["stats"]["memory_bytes"];
  EXPECT_EQ(plan["total_bytes"].get<double>() - plan["weights_bytes"].get<double>(),
            mem["kv"].get<double>() + mem["scratch"].get<double>())
      << "the plan is what the run holds (the weights: memory_plan_test.cpp)";
  const auto said = graft_all(run + " --ctx auto");
  EXPECT_NE(said.output.find("memory plan: weights "), std::string::npos) << said.output;
  const auto word = graft_all(run + " --ctx lots");
  EXPECT_EQ(word.exit_code, 2);
  EXPECT_NE(word.output.find("--ctx: 'lots' is neither an integer nor \"auto\""), std::string::npos) << word.output;

  const auto profile = dir_->path() / "auto.toml";
  std::ofstream(profile) << "[context]\nsize = \"auto\"\n";
  const auto checked = graft_all("profile check " + profile.string());
  EXPECT_EQ(checked.exit_code, 0) << checked.output;
  EXPECT_NE(checked.output.find("context:  auto (the largest that fits in memory)"), std::string::npos) << checked.output;
  std::ofstream(profile) << "[context]\nsize = \"big\"\n";
  const auto wrong = graft_all("profile check " + profile.string());
  EXPECT_EQ(wrong.exit_code, 1);
  EXPECT_NE(wrong.output.find("auto.toml:2:8: context.size: expected integer or \"auto\", got string"), std::string::npos)
      << wrong.output;
}

// graft bench's lengths are its context, past the model's training context too (with the warning).
TEST_F(cli_run, BenchTakesLengthsPastTheTrainingContext) {
  const auto r = graft_all("bench --model " + model_ + " --prompt-tokens 600 --gen-tokens 8 --reps 1 -t 1 --json");
  EXPECT_EQ(r.exit_code, 0) << r.output;
  EXPECT_NE(r.output.find("context 608 exceeds the 512 tokens the model was trained on"), std::string::npos) << r.output;
}
