// graft serve: the HTTP server over one model (docs/serve.md).
#include <fmt/format.h>
#include <pthread.h>
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <thread>

#include "cli/commands.hpp"
#include "cli/run_support.hpp"
#include "server/api_key.hpp"
#include "server/http_server.hpp"

namespace graft::cli {

int cmd_serve(const Args& args) {
  po::options_description desc("graft serve [options]");
  desc.add_options()("help,h", "show this help")(
      "host", po::value<std::string>()->value_name("ADDR")->default_value("127.0.0.1"),
      "address to listen on (loopback by default; 0.0.0.0 for every interface)")(
      "port", po::value<std::int64_t>()->value_name("N")->default_value(8080), "TCP port (0: any free port, printed)")(
      "api-key", po::value<std::string>()->value_name("KEY"),
      "require this key on every route but /health ('Authorization: Bearer KEY' or 'x-api-key: KEY'); local "
      "users can read it in the process list: prefer --api-key-file or $GRAFT_API_KEY")(
      "api-key-file", po::value<std::string>()->value_name("FILE"),
      "read the key from FILE's first line instead; with neither flag, the environment variable GRAFT_API_KEY "
      "(when set) is the key")(
      "parallel", po::value<std::int64_t>()->value_name("N")->default_value(1),
      "sequences decoding together, in one forward pass per step (each with a KV store of the whole context)")(
      "request-log", po::value<std::string>()->value_name("FILE"),
      "append one JSON line per request to FILE ('-': stdout)")(
      "max-body-mib", po::value<std::int64_t>()->value_name("N")->default_value(16),
      "largest request body accepted, in MiB (larger ones get 413)")(
      "max-connections", po::value<std::int64_t>()->value_name("N")->default_value(256),
      "connections served at once, each on its own thread (a slow client holds only its own; more wait)")(
      "read-deadline", po::value<std::int64_t>()->value_name("SECONDS")->default_value(60),
      "seconds a client may take to send one request, headers and body (or to wait for a thread or its next "
      "request) before its connection is closed; 0: no deadline")(
      "max-json-values", po::value<std::int64_t>()->value_name("N")->default_value(200000),
      "most JSON values (object keys included) a request body may hold, counted before it is parsed (more: 413)")(
      "context-shift", "when a sequence fills --context-shift-at of its context, drop the oldest half of its tokens "
      "(after --context-keep) and go on, instead of ending the request")(
      "context-shift-at", po::value<double>()->value_name("F")->default_value(0.85, "0.85"),
      "the fraction of the real per-request context at which a context shift fires, in (0, 1)")(
      "context-keep", po::value<std::int64_t>()->value_name("N")->default_value(0),
      "tokens at the start a context shift keeps (a system prompt)")(
      "reasoning-budget", po::value<std::int64_t>()->value_name("N")->default_value(-1),
      "reasoning tokens a chat request may spend inside <think> before graft closes the block and the answer "
      "follows (-1: no limit; a request's thinking_budget_tokens / thinking.budget_tokens wins)")(
      "thinking-eos", po::value<std::string>()->value_name("MODE")->default_value("answer"),
      "when the model ends its sequence inside <think>: 'answer' closes the thinking and generates the answer, "
      "'stop' ends the request there");
  int exit_code = 0;
  auto parsed = parse_command("serve", args, desc, exit_code);
  if (!parsed) return exit_code;
  auto& vm = parsed->vm;
  server::ServerOptions o;
  o.host = vm["host"].as<std::string>();
  // An integer flag in [lo, hi], or the one-line error (exit 2) naming it.
  const auto integer = [&](const char* flag, std::int64_t lo, std::int64_t hi) -> std::optional<std::int64_t> {
    const std::int64_t v = vm[flag].as<std::int64_t>();
    if (v >= lo && v <= hi) return v;
    std::fprintf(stderr, "graft serve: command line: --%s: %lld is out of range: must be in %lld..%lld\n", flag,
                 static_cast<long long>(v), static_cast<long long>(lo), static_cast<long long>(hi));
    return std::nullopt;
  };
  const auto port = integer("port", 0, 65535);
  if (!port) return 2;
  const auto parallel = integer("parallel", 1, 256);
  if (!parallel) return 2;
  const auto body_mib = integer("max-body-mib", 1, 4096);
  if (!body_mib) return 2;
  const auto json_values = integer("max-json-values", 1000, 100000000);
  if (!json_values) return 2;
  const auto connections = integer("max-connections", 8, 65536);
  if (!connections) return 2;
  o.port = static_cast<int>(*port);
  o.parallel = static_cast<std::uint32_t>(*parallel);
  o.max_body_bytes = std::size_t(*body_mib) << 20;
  o.json_bounds.max_values = static_cast<std::size_t>(*json_values);
  o.max_connections = static_cast<std::size_t>(*connections);
  const auto read_deadline = integer("read-deadline", 0, 86400);
  if (!read_deadline) return 2;
  o.read_deadline_seconds = static_cast<int>(*read_deadline);
  server::ApiKeySource key_source;
  if (vm.count("api-key")) key_source.flag = vm["api-key"].as<std::string>();
  if (vm.count("api-key-file")) key_source.file = vm["api-key-file"].as<std::string>();
  if (const char* env = std::getenv(server::kApiKeyEnv)) key_source.env = env;
  auto key = server::resolve_api_key(key_source);
  if (!key) {
    std::fprintf(stderr, "graft serve: %s\n", key.status().message().c_str());
    return 2;
  }
  o.api_key = key->key;
  const double shift_at = vm["context-shift-at"].as<double>();
  if (!(shift_at > 0 && shift_at < 1)) {
    std::fprintf(stderr, "graft serve: command line: --context-shift-at: %g is out of range: must be in (0, 1)\n", shift_at);
    return 2;
  }
  const auto keep = integer("context-keep", 0, 16777216);
  if (!keep) return 2;
  if (vm.count("context-shift")) o.context_shift_at = shift_at;
  o.context_keep = static_cast<std::uint32_t>(*keep);
  o.reasoning_budget = vm["reasoning-budget"].as<std::int64_t>();
  if (o.reasoning_budget < -1) {
    std::fprintf(stderr, "graft serve: command line: --reasoning-budget: %lld is out of range: must be >= -1\n",
                 static_cast<long long>(o.reasoning_budget));
    return 2;
  }
  const std::string eos_mode = vm["thinking-eos"].as<std::string>();
  if (eos_mode != "answer" && eos_mode != "stop") {
    std::fprintf(stderr, "graft serve: command line: --thinking-eos: '%s' must be answer or stop\n", eos_mode.c_str());
    return 2;
  }
  o.answer_after_eos_in_thinking = eos_mode == "answer";
  if (vm.count("request-log")) o.request_log = vm["request-log"].as<std::string>();
  // SIGINT/SIGTERM reach one thread that stops the server (every thread made later inherits the mask).
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGINT);
  sigaddset(&stop_signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);

  // The server's sequences each hold a whole context and share one workspace: the plan counts them.
  MemoryOptions memory;
  memory.parallel = o.parallel;
  memory.shared_workspace = true;
  auto pipeline = build_pipeline(parsed->profile, 256, memory);
  if (!pipeline) {
    std::fprintf(stderr, "graft serve: %s\n", pipeline.status().message().c_str());
    return 1;
  }
  auto server = server::HttpServer::create(**pipeline, o);
  if (!server) {
    std::fprintf(stderr, "graft serve: %s\n", server.status().message().c_str());
    return 1;
  }
  auto bound = (*server)->bind();
  if (!bound) {
    std::fprintf(stderr, "graft serve: %s\n", bound.status().message().c_str());
    return 1;
  }
  std::fprintf(stderr, "graft serve: listening on http://%s:%d (model %s, context per request %u tokens)%s\n",
               o.host.c_str(), *bound, parsed->profile.model.filename().string().c_str(),
               (*pipeline)->context(), o.api_key.empty() ? "" : (", API key required, from " + key->origin).c_str());
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&stop_signals, &sig);
    (*server)->stop();
  });
  (*server)->serve();
  // serve() also returns when the socket fails; wake the stopper thread so it can be joined.
  pthread_kill(stopper.native_handle(), SIGTERM);
  stopper.join();
  std::fprintf(stderr, "graft serve: stopped\n");
  return 0;
}

}  // namespace graft::cli
