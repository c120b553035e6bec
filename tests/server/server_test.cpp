// graft serve's HTTP layer on loopback, in-process, over the zoo model: the routes answer with
// the OpenAI shapes; a completion is exactly what plain generation gives; streaming gives the
// same text in pieces; the API key, bad requests, bodies over the limit, prompts over the
// context and clients that go away mid-stream get the right status and message, and the server
// keeps serving. (The npm-client tests of the issue come with the chat routes.)
#include <gtest/gtest.h>
#include <fmt/format.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <fstream>
#include <nlohmann/json.hpp>
#include <thread>

#include <unistd.h>

#include "engine/pipeline.hpp"
#include "gguf/gguf_file.hpp"
#include "gguf/gguf_writer.hpp"
#include "scripted_model.hpp"
#include "server/http_server.hpp"
#include "server/server_test_util.hpp"
#include "test_util.hpp"
#include "tokenizer/tokenizer.hpp"

namespace fs = std::filesystem;
using namespace graft;
using nlohmann::json;
using namespace graft::server_test;

namespace {

void with_ngram(Profile& profile) {
  profile.speculative.enabled = true;
  profile.drafters = {PluginChoice{"ngram", {}, "", {}}};
}

// The three drafters of the fastest known setup: n-gram lookup, the file's MTP head, DFlash2.
void with_all_three(Profile& profile) {
  profile.speculative.enabled = true;
  Config dflash;
  dflash.set("model", (fs::path(GRAFT_SOURCE_DIR) / "models" / "zoo-dflash2-2x256.gguf").string());
  profile.drafters = {PluginChoice{"ngram", {}, "", {}}, PluginChoice{"mtp", {}, "", {}},
                      PluginChoice{"dflash2", dflash, "", {}}};
}

}  // namespace

TEST(Server, HealthModelsPropsAndUnknownRoutes) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  EXPECT_EQ(json::parse(h->body)["status"], "ok");
  auto m = c.Get("/v1/models");
  ASSERT_TRUE(m);
  const json models = json::parse(m->body);
  EXPECT_EQ(models["object"], "list");
  ASSERT_EQ(models["data"].size(), 1u);
  EXPECT_EQ(models["data"][0]["id"], "zoo-qwen3-4x256");
  EXPECT_EQ(models["data"][0]["meta"]["n_ctx_per_request"], kContext);
  auto props = c.Get("/props");
  ASSERT_TRUE(props);
  EXPECT_EQ(json::parse(props->body)["n_ctx_per_request"], kContext);
  auto none = c.Get("/v1/nothing");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  EXPECT_EQ(json::parse(none->body)["error"]["message"], "no route GET /v1/nothing");
  // Anthropic's route answers errors in Anthropic's shape.
  const json anthropic = post(c, "/v1/messages", {{"messages", json::array()}}, 400);
  EXPECT_EQ(anthropic["type"], "error");
  EXPECT_EQ(anthropic["error"]["type"], "invalid_request_error");
  EXPECT_EQ(anthropic["error"]["message"], "'max_tokens' is required: an integer >= 1");
}

TEST(Server, CompletionIsPlainGreedyGenerationAndStreamingGivesTheSameText) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const std::string prompt = "def fibonacci(n):\n";
  const std::string want = plain_greedy(*srv.pipeline, prompt, 40);
  const json whole = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}}, 200);
  EXPECT_EQ(whole["object"], "text_completion");
  EXPECT_EQ(whole["choices"][0]["text"], want);
  EXPECT_EQ(whole["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(whole["usage"]["completion_tokens"], 40);
  EXPECT_EQ(whole["usage"]["total_tokens"].get<int>(),
            whole["usage"]["prompt_tokens"].get<int>() + 40);

  std::string body;
  auto r = c.Post("/v1/completions",
                  json{{"prompt", prompt}, {"max_tokens", 40}, {"temperature", 0}, {"stream", true},
                       {"stream_options", {{"include_usage", true}}}}
                      .dump(),
                  "application/json");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "text/event-stream");
  std::string streamed, finish;
  int usage_chunks = 0;
  bool done = false;
  std::istringstream events(r->body);
  for (std::string line; std::getline(events, line);) {
    if (line.empty()) continue;
    ASSERT_EQ(line.rfind("data: ", 0), 0u) << line;
    ASSERT_FALSE(done) << "an event after [DONE]";
    const std::string data = line.substr(6);
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    const json e = json::parse(data);
    if (e.contains("usage")) {
      ++usage_chunks;
      EXPECT_EQ(e["usage"]["completion_tokens"], 40);
      continue;
    }
    streamed += e["choices"][0]["text"].get<std::string>();
    if (!e["choices"][0]["finish_reason"].is_null()) finish = e["choices"][0]["finish_reason"];
  }
  EXPECT_TRUE(done);
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(finish, "length");
  EXPECT_EQ(usage_chunks, 1);
}

TEST(Server, ApiKeyIsRequiredOnEveryRouteButHealth) {
  server::ServerOptions o;
  o.api_key = "sekrit";
  Running srv(o);
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  auto h = c.Get("/health");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->status, 200);
  for (const char* path : {"/v1/models", "/metrics", "/props"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << path;
    EXPECT_EQ(json::parse(r->body)["error"]["message"],
              "missing or wrong API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'");
  }
  post(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1}}, 401);
  auto wrong = c.Get("/v1/models", {{"Authorization", "Bearer nope"}});
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 401);
  auto bearer = c.Get("/v1/models", {{"Authorization", "Bearer sekrit"}});
  ASSERT_TRUE(bearer);
  EXPECT_EQ(bearer->status, 200);
  auto anthropic_style = c.Get("/v1/models", {{"x-api-key", "sekrit"}});
  ASSERT_TRUE(anthropic_style);
  EXPECT_EQ(anthropic_style->status, 200);
  // The scheme in any case (RFC 7235), the key exactly.
  for (const char* auth : {"bearer sekrit", "BEARER sekrit", "Bearer  sekrit"}) {
    auto r = c.Get("/v1/models", {{"Authorization", auth}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 200) << auth;
  }
  for (const char* auth : {"bearer Sekrit", "Basic sekrit", "sekrit", "bearer sekrit2", "bearersekrit"}) {
    auto r = c.Get("/v1/models", {{"Authorization", auth}});
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 401) << auth;
  }
}

TEST(Server, BadRequestsGetTheFieldAndTheReason) {
  server::ServerOptions o;
  o.max_body_bytes = 1 << 20;
  Running srv(o);
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  auto raw = c.Post("/v1/completions", "{\"prompt\": \"x\",", "application/json");
  ASSERT_TRUE(raw);
  EXPECT_EQ(raw->status, 400);
  EXPECT_EQ(json::parse(raw->body)["error"]["message"], "the request body is not valid JSON");
  struct Case {
    json body;
    std::string message, param;
  } cases[] = {
      {json::array(), "the request body must be a JSON object", ""},
      {{{"max_tokens", 4}}, "'prompt' is required", "prompt"},
      {{{"prompt", ""}}, "'prompt' is empty: there is nothing to continue from", "prompt"},
      {{{"prompt", "x"}, {"max_tokens", "4"}}, "'max_tokens' must be an integer", "max_tokens"},
      {{{"prompt", "x"}, {"max_tokens", -1}}, "'max_tokens' is -1; it must be in 0..9223372036854775807", "max_tokens"},
      {{{"prompt", "x"}, {"temperature", 101}}, "'temperature' is 101; it must be in 0..100", "temperature"},
      {{{"prompt", "x"}, {"stream", "yes"}}, "'stream' must be true or false", "stream"},
      {{{"prompt", "x"}, {"stop", json::array({1})}}, "'stop' must be a string or an array of strings", "stop"},
      {{{"prompt", "x"}, {"n", 2}}, "'n' other than 1 is not supported", "n"},
      {{{"prompt", json::array({"a", "b"})}}, "several prompts in one request are not supported; send one request per prompt",
       "prompt"},
      {{{"prompt", json::array({1, 99999})}}, "'prompt' holds token id 99999, outside the vocabulary (0..4095)", "prompt"},
  };
  for (const Case& k : cases) {
    const json e = post(c, "/v1/completions", k.body, 400);
    EXPECT_EQ(e["error"]["message"], k.message) << k.body;
    EXPECT_EQ(e["error"]["param"], k.param.empty() ? json(nullptr) : json(k.param)) << k.body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error");
  }
  // Unknown fields are ignored, as OpenAI's clients send optional ones freely.
  const json ok = post(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 2}, {"user", "me"}, {"whatever", 1}}, 200);
  EXPECT_EQ(ok["usage"]["completion_tokens"], 2);
  // A prompt that leaves no room: the numbers in the message.
  std::string long_prompt;
  for (int i = 0; i < 400; ++i) long_prompt += " x";
  const json over = post(c, "/v1/completions", {{"prompt", long_prompt}}, 400);
  EXPECT_NE(over["error"]["message"].get<std::string>().find("but this server's context per request is 256 tokens"),
            std::string::npos)
      << over;
  // A body over the limit: 413, JSON.
  auto big = c.Post("/v1/completions", std::string(2 << 20, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body)["error"]["message"], "the request body is over the server's limit");
  // max_tokens of 10^9 ends when the context is full, and says so.
  const json full = post(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 1000000000}, {"temperature", 0}}, 200);
  EXPECT_EQ(full["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(full["graft"]["stop_reason"], "context_full");
  EXPECT_EQ(full["usage"]["total_tokens"], kContext);
}

TEST(Server, AClientThatGoesAwayMidStreamStopsItsGenerationAndTheServerGoesOn) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  int chunks = 0;
  httplib::Request req;
  req.method = "POST";
  req.path = "/v1/completions";
  req.body = json{{"prompt", "x"}, {"max_tokens", 200}, {"temperature", 0}, {"stream", true}}.dump();
  req.set_header("Content-Type", "application/json");
  req.content_receiver = [&](const char*, std::size_t, std::uint64_t, std::uint64_t) { return ++chunks < 3; };
  auto r = c.send(req);
  EXPECT_FALSE(r) << "the client stopped reading; the request reports canceled";
  // The server serves the next request, and the abandoned one stopped well before 200 tokens.
  const json next = post(c, "/v1/completions", {{"prompt", "y"}, {"max_tokens", 3}}, 200);
  EXPECT_EQ(next["usage"]["completion_tokens"], 3);
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  const std::string metrics = m->body;
  const auto at = metrics.find("\ngraft_generated_tokens_total ");
  ASSERT_NE(at, std::string::npos) << metrics;
  const long generated = std::stol(metrics.substr(at + 30));
  EXPECT_LT(generated, 200 + 3) << "the abandoned generation ran to its end";
  EXPECT_NE(metrics.find("graft_requests_total{route=\"/v1/completions\",status=\"200\"}"), std::string::npos);
  EXPECT_NE(metrics.find("graft_kv_tokens_capacity 256"), std::string::npos);
}

// Requests from many clients at once queue for the one sequence: every one is answered, each with
// exactly plain generation's text for its own prompt (no request sees another's KV).
TEST(Server, ConcurrentClientsAreEachAnsweredWithTheirOwnContinuation) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  constexpr int kClients = 12;
  std::vector<std::string> want(kClients), got(kClients);
  for (int i = 0; i < kClients; ++i) want[i] = plain_greedy(*srv.pipeline, "item " + std::to_string(i) + " =", 8);
  std::vector<std::thread> threads;
  std::vector<int> status(kClients, 0);
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] {
      auto c = srv.client();
      auto r = c.Post("/v1/completions",
                      json{{"prompt", "item " + std::to_string(i) + " ="}, {"max_tokens", 8}, {"temperature", 0},
                           {"stream", i % 2 == 1}}
                          .dump(),
                      "application/json");
      if (!r) return;
      status[i] = r->status;
      if (i % 2 == 0) {
        got[i] = json::parse(r->body)["choices"][0]["text"];
        return;
      }
      std::istringstream events(r->body);
      for (std::string line; std::getline(events, line);)
        if (line.rfind("data: {", 0) == 0) got[i] += json::parse(line.substr(6))["choices"][0]["text"].get<std::string>();
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) {
    EXPECT_EQ(status[i], 200) << "client " << i;
    EXPECT_EQ(got[i], want[i]) << "client " << i;
  }
}


// --parallel 4: requests decode together, several sequences in one forward pass, and each still
// gets exactly plain generation's text for its prompt (its own KV store, sampler and text).
TEST(Server, ParallelSequencesDecodeInOnePassAndEachEqualsPlainGeneration) {
  server::ServerOptions o;
  o.parallel = 4;
  Running srv(o);
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  auto props = c.Get("/props");
  ASSERT_TRUE(props);
  const json p = json::parse(props->body);
  EXPECT_EQ(p["parallel"], 4);
  EXPECT_EQ(p["context_split"], "4 sequence(s), each with a KV store of the whole context (256 tokens, 1024 in all); "
                                "a request gets one");
  // The four sequences share one workspace (the queue runs every pass), and each has its KV store.
  EXPECT_EQ(p["memory"]["workspaces"], 1);
  EXPECT_EQ(p["memory"]["workspace_bytes"], srv.pipeline->model().workspace_bytes(srv.pipeline->max_batch()));
  EXPECT_GE(p["memory"]["kv_device_bytes"].get<std::uint64_t>() + p["memory"]["kv_host_bytes"].get<std::uint64_t>(),
            4u * 256 * srv.pipeline->model().params().n_main_layers() * 2);
  constexpr int kClients = 8;
  constexpr int kTokens = 24;
  std::vector<std::string> want(kClients), got(kClients);
  // Every third client penalises repeats: its rows' logits come back to the host; every third
  // samples (temperature 0.8, top_k 40, its own seed): its rows' 40 best candidates alone; the
  // others' greedy ids alone; all in the same passes.
  auto sampling = [](int i) {
    SamplingSettings s;
    s.temperature = i % 3 == 1 ? 0.8 : 0.0;
    s.top_k = 40;
    s.top_p = 0.95;
    s.min_p = 0.05;
    s.repeat_penalty = i % 3 == 2 ? 1.3 : 1.0;
    s.presence_penalty = 0.0;
    s.seed = 100 + i;
    return s;
  };
  for (int i = 0; i < kClients; ++i)
    want[i] = plain_generation(*srv.pipeline, "class Item" + std::to_string(i) + ":", kTokens, sampling(i));
  EXPECT_NE(plain_greedy(*srv.pipeline, "class Item2:", kTokens), want[2]) << "the penalty must change the text";
  EXPECT_NE(plain_greedy(*srv.pipeline, "class Item1:", kTokens), want[1]) << "sampling must change the text";
  std::vector<std::thread> threads;
  for (int i = 0; i < kClients; ++i)
    threads.emplace_back([&, i] {
      auto cl = srv.client();
      const SamplingSettings s = sampling(i);
      auto r = cl.Post("/v1/completions",
                       json{{"prompt", "class Item" + std::to_string(i) + ":"},
                            {"max_tokens", kTokens},
                            {"temperature", s.temperature},
                            {"top_k", s.top_k},
                            {"top_p", s.top_p},
                            {"min_p", s.min_p},
                            {"repeat_penalty", s.repeat_penalty},
                            {"presence_penalty", s.presence_penalty},
                            {"seed", s.seed}}
                           .dump(),
                       "application/json");
      if (r && r->status == 200) got[i] = json::parse(r->body)["choices"][0]["text"];
    });
  for (auto& t : threads) t.join();
  for (int i = 0; i < kClients; ++i) EXPECT_EQ(got[i], want[i]) << "client " << i;
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  const long passes = metric_value(m->body, "graft_forward_passes_total");
  const long sequences = metric_value(m->body, "graft_forward_sequences_total");
  EXPECT_EQ(metric_value(m->body, "graft_generated_tokens_total"), kClients * kTokens);
  // 8 requests x 24 tokens one at a time would take 8 x 24 passes; together, far fewer.
  EXPECT_GT(double(sequences) / double(passes), 1.5) << passes << " passes, " << sequences << " sequences";
  EXPECT_EQ(metric_value(m->body, "graft_kv_tokens_capacity"), 4 * 256);
}

// With drafters and --parallel 2, each sequence speculates with its own decoder, the two taking
// turns round by round: 4 clients at once each get exactly plain greedy generation's text, and
// /metrics sums both decoders' rounds.
namespace {
// Every prompt at once, each from its own client: greedy completions of max_tokens, the answers
// in the prompts' order.
std::vector<json> complete_at_once(Running& srv, const std::vector<std::string>& prompts, int max_tokens) {
  std::vector<json> answers(prompts.size());
  std::vector<std::thread> clients;
  for (std::size_t i = 0; i < prompts.size(); ++i)
    clients.emplace_back([&, i] {
      auto c = srv.client();
      answers[i] =
          post(c, "/v1/completions", {{"prompt", prompts[i]}, {"max_tokens", max_tokens}, {"temperature", 0}}, 200);
    });
  for (auto& t : clients) t.join();
  return answers;
}
}  // namespace

TEST(Server, ParallelSequencesWithDraftersEachEqualPlainGeneration) {
  server::ServerOptions o;
  o.parallel = 2;
  Running srv(o, zoo_pipeline(with_ngram));
  ASSERT_GT(srv.port, 0);
  const std::vector<std::string> prompts = {"def f(x):", "import os\nimport sys\n", "class A:\n    def __init__(self",
                                            "    for i in range(10):\n"};
  const std::vector<json> answers = complete_at_once(srv, prompts, 48);
  double rounds = 0;
  for (std::size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(answers[i]["choices"][0]["text"], plain_greedy(*srv.pipeline, prompts[i], 48)) << prompts[i];
    rounds += 48 / answers[i]["graft"]["tokens_per_round"].get<double>();
  }
  auto c = srv.client();
  const std::string m = c.Get("/metrics")->body;
  // Each answer's rounds, from its own tokens per round (its last round may stop early: a bound).
  EXPECT_GE(metric_value(m, "graft_speculative_rounds_total"), static_cast<long>(rounds * 0.9));
  EXPECT_EQ(metric_value(m, "graft_requests_running"), 0);
  // The two sequences' rounds shared forward passes (not one sequence's pass after the other's).
  EXPECT_GT(metric_value(m, "graft_forward_sequences_total"), metric_value(m, "graft_forward_passes_total"));
}

// With the profile's drafters the server speculates per request: the same text as plain greedy
// generation, the request's tokens per round in its answer, the drafters in /metrics.
TEST(Server, SpeculativeDecodingUnderTheServerIsLossless) {
  Running srv({}, zoo_pipeline(with_ngram));
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const std::string prompt = "    def __init__(self, name):\n        self.name = name\n    def __init__(self";
  const json r = post(c, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 64}, {"temperature", 0}}, 200);
  // plain_greedy runs Session::generate without the drafters: plain decoding.
  EXPECT_EQ(r["choices"][0]["text"], plain_greedy(*srv.pipeline, prompt, 64));
  EXPECT_GT(r["graft"]["tokens_per_round"].get<double>(), 1.0) << r;
  auto m = c.Get("/metrics");
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("graft_speculative_accepted_total{drafter=\"ngram\"}"), std::string::npos);
  // The one drafter's tokens per round: at least the request's (a round without its proposal emits 1).
  const auto at = m->body.find("graft_speculative_drafter_tokens_per_round{drafter=\"ngram\"} ");
  ASSERT_NE(at, std::string::npos) << m->body;
  const double per_round = std::stod(m->body.substr(at + std::string("graft_speculative_drafter_tokens_per_round{drafter=\"ngram\"} ").size()));
  EXPECT_GE(per_round, r["graft"]["tokens_per_round"].get<double>() - 1e-9);
}

// The agent-loop case: a request whose prompt extends what a sequence already holds (the last
// prompt and its answer) prefills only the new part, and its text is still exactly plain
// generation's for the whole prompt.
class PrefixReuse : public ::testing::TestWithParam<std::string> {};

TEST_P(PrefixReuse, APromptThatExtendsTheLastConversationReusesItsKv) {
  Running srv({}, zoo_pipeline(GetParam() == "plain" ? std::function<void(Profile&)>() : with_all_three));
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const std::string first = "import os\nimport sys\n\ndef main():\n";
  const json a = post(c, "/v1/completions", {{"prompt", first}, {"max_tokens", 16}, {"temperature", 0}}, 200);
  EXPECT_EQ(a["usage"]["prompt_tokens_details"]["cached_tokens"], 0);
  const std::string second = first + a["choices"][0]["text"].get<std::string>() + "\n\ndef helper(x):\n";
  const json b = post(c, "/v1/completions", {{"prompt", second}, {"max_tokens", 16}, {"temperature", 0}}, 200);
  EXPECT_EQ(b["choices"][0]["text"], plain_greedy(*srv.pipeline, second, 16));
  // At least the first prompt's tokens came from the KV the first request left.
  const int first_tokens = a["usage"]["prompt_tokens"];
  EXPECT_GE(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), first_tokens);
  EXPECT_LT(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), b["usage"]["prompt_tokens"].get<int>());
  // An unrelated prompt keeps nothing but what it shares (the BOS at most), and is still exact.
  const json other = post(c, "/v1/completions", {{"prompt", "class Foo:\n"}, {"max_tokens", 8}, {"temperature", 0}}, 200);
  EXPECT_LE(other["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), 1);
  EXPECT_EQ(other["choices"][0]["text"], plain_greedy(*srv.pipeline, "class Foo:\n", 8));
  if (GetParam() != "plain") {
    // Every drafter followed the cuts back to the shared prefixes (none failed, none was disabled).
    const std::string m = c.Get("/metrics")->body;
    for (const char* d : {"ngram", "mtp", "dflash2"})
      EXPECT_NE(m.find(fmt::format("graft_speculative_drafter_failures_total{{drafter=\"{}\"}} 0\n", d)), std::string::npos)
          << d << "\n" << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Server, PrefixReuse, ::testing::Values("plain", "all_three_drafters"));

// Context shift: with it, a request runs past its context (the oldest half of the tokens go when
// the sequence reaches 85% of its REAL capacity: 218 of 256 here, never earlier) and its answer is
// as long as asked; without it, the same request ends when the context is full.
TEST(Server, ContextShiftFiresAtTheFractionOfTheRealCapacityNeverEarlier) {
  json shifted_text;
  server::ServerOptions o;
  o.context_shift_at = 0.85;
  o.context_keep = 4;
  Running srv(o);
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const json r = post(c, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 600}, {"temperature", 0}}, 200);
  EXPECT_EQ(r["usage"]["completion_tokens"], 600);
  EXPECT_EQ(r["graft"]["stop_reason"], "max_tokens");
  ASSERT_TRUE(r["graft"].contains("context_shifts")) << r;
  const auto shifts = r["graft"]["context_shifts"].get<std::vector<int>>();
  EXPECT_GE(shifts.size(), 2u);
  for (int at : shifts) EXPECT_EQ(at, 218) << "a shift at another length than ceil(0.85 x 256)";
  // Before the first shift the text is plain generation's (the same sequence up to there).
  const std::string plain = plain_greedy(*srv.pipeline, "x", 100);
  EXPECT_EQ(r["choices"][0]["text"].get<std::string>().substr(0, plain.size()), plain);
  shifted_text = r["choices"][0]["text"];

  // With drafters the shifts come at the same lengths (rounds are cut to land on the threshold)
  // and the text is the same: the shifted sequence is rebuilt exactly on both paths.
  Running spec(o, zoo_pipeline(with_ngram));
  ASSERT_GT(spec.port, 0);
  auto c3 = spec.client();
  const json rs = post(c3, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 600}, {"temperature", 0}}, 200);
  EXPECT_EQ(rs["graft"]["context_shifts"], r["graft"]["context_shifts"]);
  EXPECT_EQ(rs["choices"][0]["text"], shifted_text);
  EXPECT_GT(rs["graft"]["tokens_per_round"].get<double>(), 1.0);

  Running off;
  ASSERT_GT(off.port, 0);
  auto c2 = off.client();
  const json full = post(c2, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 600}, {"temperature", 0}}, 200);
  EXPECT_EQ(full["graft"]["stop_reason"], "context_full");
  EXPECT_FALSE(full["graft"].contains("context_shifts"));
}

namespace {
std::string plain_greedy_rendered(const Pipeline& p, const std::string& rendered, std::int64_t n) {
  return plain_greedy(p, rendered, n, /*add_bos=*/false);
}
}  // namespace

// The zoo file has no tokenizer.chat_template: the chat route renders with graft's ChatML
// default (said in /props), and the answer is plain generation from exactly that text, whole and
// streamed in chat.completion.chunk deltas.
TEST(ServerChat, MessagesRenderWithTheDefaultTemplateAndAnswerAsPlainGeneration) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  auto props = c.Get("/props");
  ASSERT_TRUE(props);
  EXPECT_EQ(json::parse(props->body)["chat_template"],
            "graft's default (ChatML): the model file has no tokenizer.chat_template");
  const json messages = json::array({{{"role", "system"}, {"content", "You write Python."}},
                                     {{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "def "}},
                                                                                 {{"type", "text"}, {"text", "add"}}})}}});
  const std::string rendered =
      "<|im_start|>system\nYou write Python.<|im_end|>\n<|im_start|>user\ndef add<|im_end|>\n<|im_start|>assistant\n";
  const std::string want = plain_greedy_rendered(*srv.pipeline, rendered, 20);
  const json whole =
      post(c, "/v1/chat/completions", {{"messages", messages}, {"max_completion_tokens", 20}, {"temperature", 0}}, 200);
  EXPECT_EQ(whole["object"], "chat.completion");
  EXPECT_EQ(whole["choices"][0]["message"]["role"], "assistant");
  EXPECT_EQ(whole["choices"][0]["message"]["content"], want);
  auto r = c.Post("/v1/chat/completions",
                  json{{"messages", messages}, {"max_tokens", 20}, {"temperature", 0}, {"stream", true}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  std::string streamed;
  std::vector<json> events;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);)
    if (line.rfind("data: {", 0) == 0) events.push_back(json::parse(line.substr(6)));
  ASSERT_GE(events.size(), 3u);
  EXPECT_EQ(events.front()["choices"][0]["delta"]["role"], "assistant");
  std::uint32_t last_count = 0;
  for (const json& e : events) {
    EXPECT_EQ(e["object"], "chat.completion.chunk");
    if (!e["choices"][0]["delta"].contains("content")) continue;
    streamed += e["choices"][0]["delta"]["content"].get<std::string>();
    if (e["choices"][0]["delta"].contains("role")) continue;  // the opening chunk: no text yet
    // Each text chunk carries the server's token count so far and its seconds since the first token.
    ASSERT_TRUE(e.contains("graft")) << e;
    const std::uint32_t count = e["graft"]["completion_tokens"];
    EXPECT_GE(count, std::max<std::uint32_t>(1, last_count));
    EXPECT_GE(e["graft"]["decode_seconds"].get<double>(), 0.0);
    last_count = count;
  }
  EXPECT_GT(last_count, 0u);
  EXPECT_LE(last_count, 20u);
  EXPECT_EQ(streamed, want);
  EXPECT_EQ(events.back()["choices"][0]["finish_reason"], "length");
}

TEST(ServerChat, BadMessagesGetTheFieldAndTheReason) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  struct Case {
    json body;
    std::string message, param;
  } cases[] = {
      {{{"messages", json::array()}}, "'messages' must be a non-empty array of messages", "messages"},
      {{{"messages", json::array({{{"role", "wizard"}, {"content", "x"}}})}},
       "'messages[0].role' is 'wizard'; it must be system, developer, user, assistant or tool", "messages[0].role"},
      {{{"messages", json::array({{{"role", "user"}, {"content", 5}}})}},
       "'messages[0].content' must be a string, null or an array of parts", "messages[0].content"},
      {{{"messages",
         json::array({{{"role", "user"}, {"content", json::array({{{"type", "image_url"}, {"image_url", "x"}}})}}})}},
       "'messages[0].content' has a part of type 'image_url': only text parts are supported", "messages[0].content"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"tools", "none"}}, "'tools' must be an array",
       "tools"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"tool_choice", "sometimes"}},
       "'tool_choice' must be \"none\", \"auto\", \"required\" or {\"type\": \"function\", \"function\": {\"name\": ...}}",
       "tool_choice"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})}, {"tool_choice", "required"}},
       "'tool_choice' asks for a tool call but the request offers no tools", "tool_choice"},
      {{{"messages", json::array({{{"role", "user"}, {"content", "x"}}})},
        {"tools", json::array({{{"type", "function"}, {"function", {{"name", "f"}}}}})},
        {"tool_choice", {{"type", "function"}, {"function", {{"name", "g"}}}}}},
       "'tool_choice' names function 'g', which 'tools' does not offer", "tool_choice"},
  };
  for (const Case& k : cases) {
    const json e = post(c, "/v1/chat/completions", k.body, 400);
    EXPECT_EQ(e["error"]["message"], k.message) << k.body;
    EXPECT_EQ(e["error"]["param"], k.param) << k.body;
  }
}

// tool_choice "required" or a named function makes the answer start with the call's opening in
// the model's format (the zoo file has no template: graft's ChatML default, Hermes calls), on the
// plain and the speculative paths alike, and through Anthropic's tool_choice any / tool; "none"
// hides the tools from the template.
TEST(ServerChat, ToolChoiceMakesTheAnswerOpenACall) {
  const json tools = json::array({{{"type", "function"},
                                   {"function", {{"name", "get_weather"}, {"parameters", {{"type", "object"}}}}}}});
  const json msgs = json::array({{{"role", "user"}, {"content", "The weather in Paris?"}}});
  std::string plain_named;
  for (bool speculative : {false, true}) {
    Running srv({}, zoo_pipeline(speculative ? with_ngram : std::function<void(Profile&)>()));
    ASSERT_GT(srv.port, 0);
    auto c = srv.client();
    EXPECT_EQ(json::parse(c.Get("/props")->body)["tool_call_format"], "hermes");
    const json named = post(c, "/v1/chat/completions",
                            {{"messages", msgs}, {"tools", tools}, {"max_tokens", 48}, {"temperature", 0},
                             {"tool_choice", {{"type", "function"}, {"function", {{"name", "get_weather"}}}}}}, 200);
    // The zoo model writes no valid call after the opening within max_tokens: the text comes back
    // as the model wrote it (a call that closed and parsed would be a tool_calls entry instead).
    auto opened = [](const json& message, const std::string& start, const char* why) {
      if (message.contains("tool_calls")) {
        EXPECT_EQ(message["tool_calls"][0]["function"]["name"], "get_weather") << why;
        return std::string();
      }
      EXPECT_TRUE(message["content"].is_string()) << why << ": " << message;
      const std::string text = message["content"].is_string() ? message["content"].get<std::string>() : "";
      EXPECT_EQ(text.rfind(start, 0), 0u) << why << ": " << text;
      return text;
    };
    const std::string text = opened(named["choices"][0]["message"], "<tool_call>\n{\"name\": \"get_weather\", \"arguments\":", "named");
    if (!speculative) plain_named = text;
    else EXPECT_EQ(text, plain_named) << "the same answer on the speculative path";
    const json any = post(c, "/v1/chat/completions",
                          {{"messages", msgs}, {"tools", tools}, {"max_tokens", 24}, {"temperature", 0}, {"tool_choice", "required"}},
                          200);
    opened(any["choices"][0]["message"], "<tool_call>\n{\"name\": \"", "required");
    const json anthropic =
        post(c, "/v1/messages",
             {{"messages", msgs}, {"max_tokens", 48},
              {"tools", json::array({{{"name", "get_weather"}, {"input_schema", {{"type", "object"}}}}})},
              {"tool_choice", {{"type", "tool"}, {"name", "get_weather"}}}},
             200);
    ASSERT_FALSE(anthropic["content"].empty()) << anthropic;
    const json& block = anthropic["content"][0];
    if (block["type"] == "tool_use") EXPECT_EQ(block["name"], "get_weather");
    else EXPECT_EQ(block["text"].get<std::string>().rfind("<tool_call>\n{\"name\": \"get_weather\"", 0), 0u) << anthropic;
  }
  // "none": the tools are not shown, nothing is forced: as without tools.
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const json none = post(c, "/v1/chat/completions",
                         {{"messages", msgs}, {"tools", tools}, {"max_tokens", 8}, {"temperature", 0}, {"tool_choice", "none"}}, 200);
  const json without = post(c, "/v1/chat/completions", {{"messages", msgs}, {"max_tokens", 8}, {"temperature", 0}}, 200);
  EXPECT_EQ(none["choices"][0]["message"]["content"], without["choices"][0]["message"]["content"]);
  EXPECT_EQ(none["usage"]["prompt_tokens"], without["usage"]["prompt_tokens"]);
}

// Vocabularies often hold tool-call and thinking tags as control tokens, which text decoding leaves
// out; the chat routes render the tags their parser reads (TextStream's shown tokens).
TEST(ServerChat, ControlTokensTheParserReadsAreRenderedAsText) {
  auto p = zoo_pipeline();
  ASSERT_TRUE(p);
  const Tokenizer& tok = p->tokenizer();
  const TokenId control = tok.find("<|im_start|>");
  ASSERT_GE(control, 0);
  TextStream left_out(tok, {});
  EXPECT_EQ(left_out.push(control).text, "");
  TextStream shown(tok, {}, {control});
  EXPECT_EQ(shown.push(control).text, "<|im_start|>");
}

// A file with its own template: the route renders that one (and a template that does not parse
// makes the chat route answer 500 with the parse error, never a silent fallback).
TEST(ServerChat, TheModelFilesOwnTemplateIsUsed) {
  auto with_template = [](const fs::path& out, const std::string& tmpl) {
    auto src = gguf::File::open(kTarget);
    EXPECT_TRUE(src) << src.status().message();
    gguf::Writer w;
    for (const auto& kv : (*src)->metadata()) w.add(kv.key, kv.value);
    w.add_string("tokenizer.chat_template", tmpl);
    for (const auto& t : (*src)->tensors())
      EXPECT_TRUE(w.add_tensor(t.name, std::span(t.ne.data(), t.n_dims), t.type, std::span(t.data, t.bytes)).ok());
    EXPECT_TRUE(w.write(out).ok());
  };
  const fs::path dir = fs::temp_directory_path() / ("graft-server-test-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  const fs::path good = dir / "own-template.gguf", bad = dir / "bad-template.gguf";
  with_template(good, "{% for m in messages %}[{{ m.role }}]{{ m.content }}{% endfor %}"
                      "{% if add_generation_prompt %}[assistant]{% endif %}");
  with_template(bad, "{% for m in messages %}");
  for (const auto& [path, ok] : {std::pair{good, true}, std::pair{bad, false}}) {
    Running srv({}, zoo_pipeline({}, path));
    ASSERT_GT(srv.port, 0);
    auto c = srv.client();
    const json body = {{"messages", json::array({{{"role", "user"}, {"content", "def f(x):"}}})},
                       {"max_tokens", 12},
                       {"temperature", 0}};
    if (ok) {
      const json r = post(c, "/v1/chat/completions", body, 200);
      EXPECT_EQ(r["choices"][0]["message"]["content"], plain_greedy_rendered(*srv.pipeline, "[user]def f(x):[assistant]", 12));
      EXPECT_EQ(json::parse(c.Get("/props")->body)["chat_template"], "the model file (tokenizer.chat_template)");
    } else {
      const json r = post(c, "/v1/chat/completions", body, 500);
      EXPECT_NE(r["error"]["message"].get<std::string>().find("the model's chat template does not parse: chat template line 1"),
                std::string::npos)
          << r;
    }
  }
  fs::remove_all(dir);
}

// Thinking under control is the same on every decoding path: plain, batched with another
// sequence, and speculative (where a forced close restarts the generation over the sequence so
// far): the reasoning, the answer and the reasoning-token count are the scripted model's, for no
// budget (its end of sequence inside thinking is replaced by the close), budgets of 0 and 2, and
// thinking switched off; on both APIs.
TEST(ServerThinking, BudgetsAndAnEndOfSequenceInsideThinkingGiveTheAnswerOnEveryDecodingPath) {
  const fs::path dir = fs::temp_directory_path() / ("graft-thinking-test-" + std::to_string(::getpid()));
  const fs::path model = dir / "scripted.gguf";
  ASSERT_TRUE(scripted::write_scripted_model(kTarget, model).ok());
  const std::string reasoning(scripted::kReasoning.substr(1)), answer(scripted::kAnswer);
  const std::string two = " Let me think. The user asks about weather.";
  struct Case {
    json extra;             // request fields
    std::string reasoning;  // what reasoning_content must be
    std::uint32_t reasoning_tokens;
    const char* forced;  // graft.thinking_forced_closed
  };
  const std::vector<Case> cases = {
      {json::object(), reasoning, 4, "end_of_sequence"},
      {{{"thinking_budget_tokens", 2}}, two.substr(1), 2, "budget"},
      {{{"thinking_budget_tokens", 0}}, "", 0, "budget"},
      {{{"chat_template_kwargs", {{"enable_thinking", false}}}}, "", 0, nullptr},
      // OpenAI's reasoning_effort: none (and minimal) switch thinking off, low caps it at 1024 tokens
      // (more than this model thinks), and an explicit budget wins over it.
      {{{"reasoning_effort", "none"}}, "", 0, nullptr},
      {{{"reasoning_effort", "minimal"}}, "", 0, nullptr},
      {{{"reasoning_effort", "low"}}, reasoning, 4, "end_of_sequence"},
      {{{"reasoning_effort", "high"}}, reasoning, 4, "end_of_sequence"},
      {{{"reasoning_effort", "none"}, {"thinking_budget_tokens", 2}}, two.substr(1), 2, "budget"},
  };
  server::ServerOptions two_seq;
  two_seq.parallel = 2;
  for (const auto& [name, options, edit] :
       std::vector<std::tuple<std::string, server::ServerOptions, std::function<void(Profile&)>>>{
           {"plain", {}, {}}, {"parallel 2", two_seq, {}}, {"ngram", {}, with_ngram}, {"ngram parallel 2", two_seq, with_ngram}}) {
    Running srv(options, zoo_pipeline(edit, model));
    ASSERT_GT(srv.port, 0);
    auto c = srv.client();
    for (const Case& k : cases) {
      json body = {{"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
                   {"max_tokens", 40},
                   {"temperature", 0}};
      body.update(k.extra);
      const json r = post(c, "/v1/chat/completions", body, 200);
      const json& m = r["choices"][0]["message"];
      EXPECT_EQ(m.value("reasoning_content", ""), k.reasoning) << name << " " << body;
      EXPECT_EQ(m["content"], answer) << name << " " << body;
      EXPECT_EQ(r["choices"][0]["finish_reason"], "stop") << name;
      EXPECT_EQ(r["usage"]["completion_tokens_details"]["reasoning_tokens"], k.reasoning_tokens) << name << " " << body;
      if (k.forced)
        EXPECT_EQ(r["graft"]["thinking_forced_closed"], k.forced) << name << " " << body;
      else
        EXPECT_FALSE(r["graft"].contains("thinking_forced_closed")) << name << " " << r;
    }
    // Anthropic's budget, and its thinking switch.
    const json a = post(c, "/v1/messages",
                        {{"max_tokens", 40},
                         {"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
                         {"thinking", {{"type", "enabled"}, {"budget_tokens", 2}}}},
                        200);
    ASSERT_EQ(a["content"].size(), 2u) << a;
    EXPECT_EQ(a["content"][0]["thinking"], two.substr(1)) << name;
    EXPECT_EQ(a["content"][1]["text"], answer) << name;
    EXPECT_EQ(a["stop_reason"], "end_turn");
    const json off = post(c, "/v1/messages",
                          {{"max_tokens", 40},
                           {"messages", json::array({{{"role", "user"}, {"content", "Weather in Paris?"}}})},
                           {"thinking", {{"type", "disabled"}}}},
                          200);
    ASSERT_EQ(off["content"].size(), 1u) << off;
    EXPECT_EQ(off["content"][0]["type"], "text");
    EXPECT_EQ(off["content"][0]["text"], answer);
  }
  // --thinking-eos stop: the end of sequence inside thinking ends the request, with no answer.
  server::ServerOptions stop_at_eos;
  stop_at_eos.answer_after_eos_in_thinking = false;
  Running srv(stop_at_eos, zoo_pipeline({}, model));
  auto c = srv.client();
  const json r = post(c, "/v1/chat/completions",
                      {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"max_tokens", 40}, {"temperature", 0}},
                      200);
  EXPECT_EQ(r["choices"][0]["message"]["reasoning_content"], reasoning);
  EXPECT_EQ(r["choices"][0]["message"]["content"], "");
  EXPECT_EQ(r["graft"]["stop_reason"], "end_of_sequence");
  fs::remove_all(dir);
}

TEST(ServerThinking, AThinkingBudgetOfTheWrongTypeIsRefusedByName) {
  Running srv;
  auto c = srv.client();
  const json r = post(c, "/v1/chat/completions",
                      {{"messages", json::array({{{"role", "user"}, {"content", "hi"}}})}, {"thinking_budget_tokens", "x"}},
                      400);
  EXPECT_EQ(r["error"]["param"], "thinking_budget_tokens");
}

// reasoning_effort: a value OpenAI does not define is refused by name (what each defined one does
// to thinking: BudgetsAndAnEndOfSequenceInsideThinking... above), and the defined ones are served.
TEST(ServerThinking, AReasoningEffortIsAppliedOrRefusedNeverIgnored) {
  Running srv;
  auto c = srv.client();
  const json msgs = json::array({{{"role", "user"}, {"content", "hi"}}});
  const json bad = post(c, "/v1/chat/completions", {{"messages", msgs}, {"reasoning_effort", "extreme"}}, 400);
  EXPECT_EQ(bad["error"]["param"], "reasoning_effort");
  EXPECT_EQ(bad["error"]["message"], "'reasoning_effort' must be one of none, minimal, low, medium, high");
  const json typed = post(c, "/v1/chat/completions", {{"messages", msgs}, {"reasoning_effort", 3}}, 400);
  EXPECT_EQ(typed["error"]["param"], "reasoning_effort");
  for (const char* effort : {"none", "minimal", "low", "medium", "high"})
    post(c, "/v1/chat/completions", {{"messages", msgs}, {"reasoning_effort", effort}, {"max_tokens", 2}}, 200);
}

// Anthropic's route: count_tokens counts what /v1/messages would prefill (its usage agrees), and
// what graft does not read is refused by name, in Anthropic's error shape.
TEST(ServerAnthropic, CountTokensAgreesWithUsageAndUnreadBlocksAreRefusedByName) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const json msgs = json::array({{{"role", "user"}, {"content", json::array({{{"type", "text"}, {"text", "def f(x):"}}})}}});
  const json count = post(c, "/v1/messages/count_tokens", {{"messages", msgs}, {"system", "Be brief."}}, 200);
  const json r = post(c, "/v1/messages", {{"messages", msgs}, {"system", "Be brief."}, {"max_tokens", 4}, {"temperature", 0}}, 200);
  EXPECT_GT(count["input_tokens"].get<int>(), 0);
  EXPECT_EQ(count["input_tokens"], r["usage"]["input_tokens"].get<int>() + r["usage"]["cache_read_input_tokens"].get<int>());
  EXPECT_EQ(r["stop_reason"], "max_tokens");
  EXPECT_EQ(r["usage"]["output_tokens"], 4);
  const std::vector<std::pair<json, std::string>> bad = {
      {{{"max_tokens", 4},
        {"messages", json::array({{{"role", "user"}, {"content", json::array({{{"type", "image"}, {"source", json::object()}}})}}})}},
       "'messages[0].content[0]' is a 'image' block in a user message: graft reads text, thinking, tool_use (assistant) "
       "and tool_result (user) blocks"},
      {{{"max_tokens", 4}, {"messages", msgs}, {"tool_choice", {{"type", "any"}}}},
       "'tool_choice' asks for a tool call but the request offers no tools"},
      {{{"max_tokens", 4}, {"messages", msgs}, {"tool_choice", {{"type", "always"}}}},
       "'tool_choice' type 'always' is not one of auto, any, tool, none"},
      {{{"max_tokens", 4}, {"messages", msgs}, {"tool_choice", {{"type", "tool"}}}},
       "'tool_choice' of type 'tool' needs the tool's 'name'"},
      {{{"max_tokens", 4},
        {"messages", msgs},
        {"tools", json::array({{{"name", "f"}, {"input_schema", {{"type", "object"}}}}})},
        {"tool_choice", {{"type", "tool"}, {"name", "g"}}}},
       "'tool_choice' names tool 'g', which 'tools' does not offer"},
      {{{"max_tokens", 0}, {"messages", msgs}}, "'max_tokens' must be at least 1"},
      {{{"max_tokens", 4}, {"messages", msgs}, {"thinking", {{"type", "enabled"}}}},
       "'thinking.budget_tokens' must be an integer >= 0"},
      {{{"max_tokens", 4}, {"messages", json::array({{{"role", "system"}, {"content", "x"}}})}},
       "'messages[0].role' must be \"user\" or \"assistant\""},
  };
  for (const auto& [body, message] : bad) {
    const json e = post(c, "/v1/messages", body, 400);
    EXPECT_EQ(e["type"], "error") << body;
    EXPECT_EQ(e["error"]["type"], "invalid_request_error") << body;
    EXPECT_EQ(e["error"]["message"], message) << body;
  }
}

// count_tokens counts a prompt of any length (a client asks it precisely to learn whether a prompt
// fits); /v1/messages refuses the same prompt past the context with a 400 that says so.
TEST(ServerAnthropic, CountTokensCountsAPromptLongerThanTheContext) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  std::string text;
  for (int i = 0; i < 200; ++i) text += "word" + std::to_string(i) + " ";
  const json msgs = json::array({{{"role", "user"}, {"content", text}}});
  const json count = post(c, "/v1/messages/count_tokens", {{"messages", msgs}}, 200);
  EXPECT_GT(count["input_tokens"].get<int>(), int(kContext));
  const json refused = post(c, "/v1/messages", {{"messages", msgs}, {"max_tokens", 4}}, 400);
  EXPECT_NE(refused["error"]["message"].get<std::string>().find("context"), std::string::npos) << refused;
}

// A streamed answer's message_start and final message_delta split the prompt alike: a prefix
// reused from the last request is a cache read in both (message_start said input 12 while
// message_delta said input 9 + cache_read 3).
TEST(ServerAnthropic, StreamUsageAgreesFromStartToEnd) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const json first = json::array({{{"role", "user"}, {"content", "def f(x):"}}});
  post(c, "/v1/messages", {{"messages", first}, {"max_tokens", 4}, {"temperature", 0}}, 200);
  json longer = first;
  longer.push_back({{"role", "assistant"}, {"content", "return x"}});
  longer.push_back({{"role", "user"}, {"content", "and g?"}});
  auto r = c.Post("/v1/messages",
                  json{{"messages", longer}, {"max_tokens", 4}, {"temperature", 0}, {"stream", true}}.dump(),
                  "application/json");
  ASSERT_TRUE(r);
  ASSERT_EQ(r->status, 200);
  json start, end;
  std::istringstream in(r->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("data: {", 0) != 0) continue;
    const json e = json::parse(line.substr(6));
    if (e["type"] == "message_start") start = e["message"]["usage"];
    if (e["type"] == "message_delta") end = e["usage"];
  }
  ASSERT_TRUE(start.is_object()) << r->body;
  ASSERT_TRUE(end.is_object()) << r->body;
  EXPECT_GT(end["cache_read_input_tokens"].get<int>(), 0) << "the second turn reuses the first's prefix";
  EXPECT_EQ(start["input_tokens"], end["input_tokens"]);
  EXPECT_EQ(start["cache_read_input_tokens"], end["cache_read_input_tokens"]);
  EXPECT_EQ(start["output_tokens"], 0);
  EXPECT_EQ(end["output_tokens"], 4);
}

// logit_bias moves the greedy choice; ids outside the vocabulary and malformed entries are refused.
TEST(Server, LogitBiasMovesTheChoiceAndBadEntriesAreRefused) {
  Running srv;
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const std::string prompt = "def f(x):";
  const std::string plain = plain_greedy(*srv.pipeline, prompt, 1);
  TokenizeOptions opt;
  opt.parse_special = true;
  // Push one ordinary token that is not the greedy choice far up: it must be the answer.
  const TokenId forced = (*srv.pipeline->tokenizer().encode(" banana", opt)).front();
  const json r = post(c, "/v1/completions",
                      {{"prompt", prompt}, {"max_tokens", 1}, {"temperature", 0}, {"logit_bias", {{std::to_string(forced), 100}}}},
                      200);
  EXPECT_NE(r["choices"][0]["text"], plain);
  EXPECT_EQ(r["choices"][0]["text"], srv.pipeline->tokenizer().decode({forced}));
  for (const auto& [bias, message] : std::vector<std::pair<json, std::string>>{
           {{{"99999", 1}}, "'logit_bias' names token 99999, outside the vocabulary (0..4095)"},
           {{{"x", 1}}, "'logit_bias' key 'x' is not a token id"},
           {{{"5", 101}}, "'logit_bias' value for token 5 must be a number in -100..100"},
           {json::array(), "'logit_bias' must be an object of token id -> bias"}}) {
    const json e = post(c, "/v1/completions", {{"prompt", prompt}, {"logit_bias", bias}}, 400);
    EXPECT_EQ(e["error"]["message"], message);
    EXPECT_EQ(e["error"]["param"], "logit_bias");
  }
}

// The server over a qwen35 hybrid (the tiny synthetic file with an MTP block): two sequences
// speculating with ngram and its MTP block each answer exactly plain greedy generation, /props
// counts their recurrent states, a prompt that extends the last conversation reuses the sequence
// (its KV and, through a checkpoint, its state) and stays exact, and a context shift rebuilds the
// state from the kept tokens like the KV.
// Every prompt at once from its own client (32 tokens each), each answer plain greedy's text over
// the server's pipeline; then the agent loop: a prompt extending the last one and its answer
// reuses its KV (at least the first prompt's tokens) and is still plain greedy's.
namespace {
void expect_parallel_and_reuse_exact(Running& srv, const std::vector<std::string>& prompts) {
  const std::vector<json> answers = complete_at_once(srv, prompts, 32);
  for (std::size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(answers[i]["choices"][0]["text"], plain_greedy(*srv.pipeline, prompts[i], 32)) << prompts[i];
  auto c = srv.client();
  const std::string first = "import sys\n\ndef main():\n";
  const json a = post(c, "/v1/completions", {{"prompt", first}, {"max_tokens", 12}, {"temperature", 0}}, 200);
  const std::string second = first + a["choices"][0]["text"].get<std::string>() + "\n# next\n";
  const json b = post(c, "/v1/completions", {{"prompt", second}, {"max_tokens", 12}, {"temperature", 0}}, 200);
  EXPECT_EQ(b["choices"][0]["text"], plain_greedy(*srv.pipeline, second, 12));
  EXPECT_GE(b["usage"]["prompt_tokens_details"]["cached_tokens"].get<int>(), a["usage"]["prompt_tokens"].get<int>());
}
}  // namespace

TEST(ServerQwen35, ParallelSpeculativePrefixReuseAndContextShiftAreExact) {
  TempDir dir;
  const auto model = dir.path() / "qwen35.gguf";
  auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --nextn 1 --seed 7 --out " + model.string());
  ASSERT_EQ(r.exit_code, 0) << r.output;
  const auto drafters = [](Profile& p) {
    p.speculative.enabled = true;
    p.drafters = {PluginChoice{"ngram", {}, "test", {}}, PluginChoice{"mtp", {}, "test", {}}};
  };
  server::ServerOptions o;
  o.parallel = 2;
  Running srv(o, zoo_pipeline(drafters, model));
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  const json props = json::parse(c.Get("/props")->body);
  EXPECT_GE(props["memory"]["recurrent_state_bytes"].get<std::uint64_t>(),
            2 * srv.pipeline->model().params().recurrent_state_floats() * sizeof(float));
  expect_parallel_and_reuse_exact(srv, {"def f(x):", "import os\n", "class A:", "for i in"});

  // Context shift on the hybrid, plain decoding: the text before the first shift is plain
  // generation's, and the answer runs past the context.
  server::ServerOptions shift;
  shift.context_shift_at = 0.85;
  shift.context_keep = 4;
  Running plain_srv(shift, zoo_pipeline({}, model));
  ASSERT_GT(plain_srv.port, 0);
  auto c2 = plain_srv.client();
  const json s = post(c2, "/v1/completions", {{"prompt", "x"}, {"max_tokens", 400}, {"temperature", 0}}, 200);
  EXPECT_EQ(s["usage"]["completion_tokens"], 400);
  EXPECT_FALSE(s["graft"]["context_shifts"].empty());
  const std::string before = plain_greedy(*plain_srv.pipeline, "x", 100);
  EXPECT_EQ(s["choices"][0]["text"].get<std::string>().substr(0, before.size()), before);
}

// The quant store under the server: for the zoo and a qwen35 hybrid (its attention layers in the
// store, its delta-net layers in recurrent state), with q8_0/q8_0 and q8_0/tq3 caches, two
// sequences speculating at once (ngram and mtp: trees verified, compacted and rolled back) each
// give plain greedy generation's text over the same store, and a prompt that extends the last
// conversation reuses its quantized KV and is still exact.
class QuantizedKvServer : public ::testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(QuantizedKvServer, ParallelSpeculativeSequencesAndPrefixReuseAreExact) {
  const auto& [arch, kv] = GetParam();
  TempDir dir;
  fs::path model = fs::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";
  if (arch == "qwen35") {
    model = dir.path() / "qwen35.gguf";
    auto r = run_command(std::string(GRAFT_EXE) + " synth --preset qwen35-tiny --nextn 1 --seed 7 --out " + model.string());
    ASSERT_EQ(r.exit_code, 0) << r.output;
  }
  const auto edit = [kv = kv](Profile& p) {
    p.speculative.enabled = true;
    p.drafters = {PluginChoice{"ngram", {}, "test", {}}, PluginChoice{"mtp", {}, "test", {}}};
    p.kv = PluginChoice{"quant", {}, "test", {}};
    p.kv.config.set("type_k", kv.substr(0, kv.find('/')));
    p.kv.config.set("type_v", kv.substr(kv.find('/') + 1));
  };
  server::ServerOptions o;
  o.parallel = 2;
  Running srv(o, zoo_pipeline(edit, model));
  ASSERT_GT(srv.port, 0);
  auto c = srv.client();
  EXPECT_EQ(json::parse(c.Get("/props")->body)["parallel"], 2);
  EXPECT_EQ(kv_label(srv.pipeline->profile().kv), "quant " + kv);
  auto probe = srv.pipeline->new_session();
  ASSERT_TRUE(probe);
  EXPECT_FALSE((*probe)->kv().lossless()) << "a quantized store";
  expect_parallel_and_reuse_exact(srv, {"def f(x):", "import os\nimport sys\n", "class A:\n    def __init__(self",
                                       "    for i in range(10):\n"});
  const std::string m = c.Get("/metrics")->body;
  for (const char* d : {"ngram", "mtp"})
    EXPECT_NE(m.find(fmt::format("graft_speculative_drafter_failures_total{{drafter=\"{}\"}} 0\n", d)), std::string::npos)
        << d << "\n" << m;
}

INSTANTIATE_TEST_SUITE_P(Server, QuantizedKvServer,
                         ::testing::Combine(::testing::Values("zoo", "qwen35"), ::testing::Values("q8_0/q8_0", "q8_0/tq3")),
                         [](const auto& info) {
                           std::string kv = std::get<1>(info.param);
                           std::replace(kv.begin(), kv.end(), '/', '_');
                           return std::get<0>(info.param) + "_" + kv;
                         });
