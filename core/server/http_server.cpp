#include "server/http_server.hpp"

#include <fmt/format.h>
#include <httplib.h>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <sys/socket.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <mutex>
#include <thread>

#include "server/api_error.hpp"
#include "server/api_key.hpp"
#include "server/chat_page.hpp"
#include "server/client_connection.hpp"
#include "server/connection_pool.hpp"
#include "server/half_closed_reply.hpp"
#include "server/json_bounds.hpp"
#include "server/server_context.hpp"
#include "speculative/drafters.hpp"

namespace graft::server {

using nlohmann::json;

namespace {
// Per request (handler and logger run on the same httplib thread): whether it is Anthropic's API,
// whose errors have their own shape.
thread_local bool t_anthropic = false;
}  // namespace

void send_error(httplib::Response& res, const ApiError& error) {
  res.status = error.status;
  const json body = t_anthropic ? error.anthropic_body() : error.openai_body();
  res.set_content(body.dump(-1, ' ', false, json::error_handler_t::replace), "application/json");
}

struct HttpServer::Impl {
  explicit Impl(Pipeline& p, const ServerOptions& o) : ctx(p, o) {}
  ServerContext ctx;
  httplib::Server http;
  std::mutex log_m;
  std::FILE* log = nullptr;
  bool own_log = false;
  int listen_fd = -1;  // the listening socket, to raise cpp-httplib's backlog of 5
  int port = -1;       // the port it listens on (bind())
  BusyConnections busy;
  // The read deadline's sweep (--read-deadline), while serve() runs.
  std::thread deadline_thread;
  std::mutex deadline_m;
  std::condition_variable deadline_cv;
  bool deadline_stop = false;
  ~Impl() {
    stop_deadline();
    if (own_log && log) std::fclose(log);
  }
  void start_deadline();
  void stop_deadline();
  void routes();
  json model_entry() const;
  void write_log(const httplib::Request& req, const httplib::Response& res);
};

namespace {
constexpr std::size_t kTrimAfterBodyBytes = std::size_t{256} << 10;

// Per request (handler and logger run on the same httplib thread): when it started, its route.
thread_local std::chrono::steady_clock::time_point t_start;

// The route a path counts under in the metrics: the known ones, else "other" (no unbounded labels).
std::string route_of(const std::string& path) {
  for (const char* r : {"/health", "/metrics", "/props", "/v1/models", "/v1/completions", "/v1/chat/completions",
                        "/v1/messages", "/v1/messages/count_tokens", "/"})
    if (path == r) return path;
  return "other";
}

bool authorized(const httplib::Request& req, const std::string& key) {
  return key_matches(req.get_header_value("Authorization"), req.get_header_value("x-api-key"), key);
}
}  // namespace

json HttpServer::Impl::model_entry() const {
  return {{"id", ctx.model_name},
          {"object", "model"},
          {"created", ctx.created},
          {"owned_by", "graft"},
          {"meta",
           {{"n_ctx_per_request", ctx.queue->capacity()},
            {"parallel", ctx.queue->parallel()},
            {"n_vocab", ctx.pipeline.tokenizer().n_vocab()},
            {"architecture", ctx.pipeline.model().params().arch_name}}}};
}

void HttpServer::Impl::write_log(const httplib::Request& req, const httplib::Response& res) {
  ctx.metrics.request(route_of(req.path), res.status);
  if (!log) return;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_start).count();
  const json line = {{"time", std::time(nullptr)},   {"remote", req.remote_addr}, {"method", req.method},
                     {"path", req.path},             {"status", res.status},      {"ms", ms},
                     {"request_bytes", req.body.size()}};
  std::lock_guard lock(log_m);
  std::fputs((line.dump(-1, ' ', false, json::error_handler_t::replace) + "\n").c_str(), log);
  std::fflush(log);
}

void HttpServer::Impl::routes() {
  const ServerOptions& o = ctx.options;
  http.set_payload_max_length(o.max_body_bytes);
  http.new_task_queue = [n = o.max_connections] { return new ConnectionPool(n); };
  http.set_socket_options([this](socket_t sock) {
    httplib::default_socket_options(sock);
    listen_fd = static_cast<int>(sock);
  });
  http.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    t_start = std::chrono::steady_clock::now();
    t_anthropic = req.path.rfind("/v1/messages", 0) == 0;
    set_current_request(req);  // a whole answer's wait watches this request's client
    busy.begin(req);
    // Before cpp-httplib reads a body by it: its unsigned parse made "-5" a huge length that it
    // then waited to read through (and refused as too large).
    if (req.has_header("Content-Length")) {
      const std::string length = req.get_header_value("Content-Length");
      if (length.empty() || length.find_first_not_of("0123456789") != std::string::npos) {
        res.set_header("Connection", "close");  // what follows the headers cannot be framed
        send_error(res, ApiError{400, "invalid_request_error",
                                 fmt::format("the Content-Length header '{}' is not a non-negative integer", length), {}});
        return httplib::Server::HandlerResponse::Handled;
      }
    }
    if (!ctx.options.api_key.empty() && req.path != "/health" && !is_chat_page_request(req) &&
        !authorized(req, ctx.options.api_key)) {
      send_error(res, ApiError{401, "authentication_error",
                               "missing or wrong API key: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'", {}});
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  });
  // Last before httplib writes the answer: a client that half-closed gets it written by us
  // (half_closed_reply.hpp).
  http.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    busy.answering();  // whatever the route (a GET that came with a body too)
    reply_if_half_closed(req, res);
  });
  http.set_logger([this](const httplib::Request& req, const httplib::Response& res) {
    write_log(req, res);
    busy.end();
    // A large body's JSON trees (up to --max-json-values nodes, twice) were small blocks in this
    // thread's arena: handed back to the system now rather than kept after the request.
    if (req.body.size() >= kTrimAfterBodyBytes) malloc_trim(0);
  });
  // httplib's own refusals (413 for a body over the limit, 400 for a malformed request line) and
  // unknown routes get a JSON body too.
  http.set_error_handler([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty()) return;
    if (res.status == 404)
      send_error(res, ApiError{404, "not_found_error", fmt::format("no route {} {}", req.method, req.path), {}});
    else if (res.status == 413)
      send_error(res, ApiError{413, "invalid_request_error", "the request body is over the server's limit", {}});
    else if (res.status == 400 && req.version != "HTTP/1.1" && req.version != "HTTP/1.0")
      send_error(res, ApiError{400, "invalid_request_error",
                               "malformed HTTP request: the request line must be 'METHOD PATH HTTP/1.1' and headers "
                               "'Name: value'",
                               {}});
    else
      send_error(res, ApiError{res.status, "invalid_request_error",
                               fmt::format("the server could not read this HTTP request (HTTP {})", res.status),
                               {}});
  });
  http.set_exception_handler([](const httplib::Request&, httplib::Response& res, std::exception_ptr ep) {
    std::string what = "unknown exception";
    try {
      std::rethrow_exception(ep);
    } catch (const std::exception& e) {
      what = e.what();
    } catch (...) {
    }
    send_error(res, ApiError{500, "server_error", "internal error: " + what, {}});
  });

  http.Get("/health", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"status":"ok"})", "application/json");
  });
  http.Get("/v1/models", [this](const httplib::Request&, httplib::Response& res) {
    const json body = {{"object", "list"}, {"data", json::array({model_entry()})}};
    res.set_content(body.dump(), "application/json");
  });
  http.Get("/props", [this](const httplib::Request&, httplib::Response& res) {
    const Profile& p = ctx.pipeline.profile();
    json drafters = json::array();
    if (p.speculative.enabled)
      for (const PluginChoice& d : p.drafters) drafters.push_back(d.name);
    const json body = {
        {"model", model_entry()},
        {"model_path", p.model.string()},
        {"profile", p.source.empty() ? "built-in defaults" : p.source.string()},
        {"n_ctx_per_request", ctx.queue->capacity()},
        {"parallel", ctx.queue->parallel()},
        {"context_split",
         fmt::format("{} sequence(s), each with a KV store of the whole context ({} tokens, {} in all); a request "
                     "gets one",
                     ctx.queue->parallel(), ctx.queue->capacity(), ctx.queue->parallel() * ctx.queue->capacity())},
        {"kv", p.kv.name},
        {"backend", p.backend.name},
        {"drafters", drafters},
        {"default_max_tokens", p.max_tokens},
        {"context_shift_at", ctx.options.context_shift_at},
        {"chat_template", ctx.chat_template_origin},
        {"tool_call_format", ctx.tool_format.name()},
        {"reasoning_budget", ctx.options.reasoning_budget},
        {"thinking_eos", ctx.options.answer_after_eos_in_thinking ? "answer" : "stop"},
        {"context_keep", ctx.options.context_keep},
        {"memory", ctx.queue->memory()}};
    res.set_content(body.dump(), "application/json");
  });
  http.Get("/metrics", [this](const httplib::Request&, httplib::Response& res) {
    res.set_content(ctx.metrics.render(ctx.queue->depth(), ctx.queue->running()), "text/plain; version=0.0.4");
  });
  // The JSON routes: what a body would cost to parse is bounded before any route builds a tree of it
  // (cpp-httplib reads the body after the pre-routing handler, so the check is here).
  using Route = void (*)(ServerContext&, const httplib::Request&, httplib::Response&);
  const auto bounded = [this](Route route) {
    return [this, route](const httplib::Request& req, httplib::Response& res) {
      busy.answering();  // the body is read: the read deadline no longer applies
      if (auto e = check_json_bounds(req.body, ctx.options.json_bounds)) return send_error(res, *e);
      route(ctx, req, res);
    };
  };
  http.Post("/v1/completions", bounded(&handle_completions));
  http.Post("/v1/chat/completions", bounded(&handle_chat_completions));
  http.Post("/v1/messages", bounded(&handle_messages));
  http.Post("/v1/messages/count_tokens", bounded(&handle_count_tokens));
  register_chat_page(http);  // GET / and its files (chat_page.hpp), without the API key
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() {
  if (impl_) impl_->http.stop();
}

Expected<std::unique_ptr<HttpServer>> HttpServer::create(Pipeline& pipeline, const ServerOptions& options) {
  // Request bodies (up to --max-body-mib) are large and short-lived, on many connection threads:
  // glibc raises its mmap threshold after the first large free, so later bodies land in the
  // threads' arenas and their pages stay with the process. A fixed threshold keeps every large
  // block mmapped and handed back when freed, so memory returns to idle after a burst.
  mallopt(M_MMAP_THRESHOLD, 256 << 10);
  auto impl = std::make_unique<Impl>(pipeline, options);
  ServerContext& ctx = impl->ctx;
  ctx.model_name = pipeline.profile().model.stem().string();
  ctx.created = std::time(nullptr);
  ctx.thinking_tokens = thinking_tokens(pipeline.tokenizer());
  // One sequence (KV store, sampler, text) per parallel request, each of the whole context, and
  // one workspace for all: the queue's one thread runs every forward pass, the sequences' rows
  // together in one pass of at most max_batch rows.
  auto workspace = pipeline.model().new_workspace(pipeline.max_batch());
  if (!workspace) return std::move(workspace).status();
  const std::shared_ptr<Workspace> shared(std::move(*workspace));
  std::vector<std::unique_ptr<Session>> sessions;
  for (std::uint32_t i = 0; i < std::max<std::uint32_t>(1, options.parallel); ++i) {
    auto session = pipeline.new_session(shared);
    if (!session) return session.status();
    sessions.push_back(std::move(*session));
  }
  // Speculation as the profile (or --draft) asks, for the server's sequence.
  auto drafters = Drafters::load(pipeline);
  if (!drafters) return std::move(drafters).status();
  // With drafters, one decoder (its own drafter instances) per sequence.
  std::vector<std::unique_ptr<SpeculativeDecoder>> decoders;
  for (std::size_t i = 0; *drafters && i < sessions.size(); ++i) {
    auto made = (*drafters)->new_decoder();
    if (!made) return std::move(made).status();
    decoders.push_back(std::move(*made));
  }
  ctx.queue = std::make_unique<GenerationQueue>(pipeline, std::move(sessions), std::move(decoders), ctx.metrics,
                                                options.context_shift_at, options.context_keep);
  // The chat template: the model's own, else the documented default (said at start-up and in /props).
  const std::optional<std::string> template_text = pipeline.file().get_string("tokenizer.chat_template");
  if (template_text) {
    ctx.chat_template_origin = "the model file (tokenizer.chat_template)";
    auto parsed = chat::ChatTemplate::parse(*template_text);
    if (auto* t = std::get_if<chat::ChatTemplate>(&parsed)) ctx.chat_template = std::make_shared<const chat::ChatTemplate>(*t);
    else ctx.chat_template_error = std::get<std::string>(parsed);
  } else {
    ctx.chat_template_origin = "graft's default (ChatML): the model file has no tokenizer.chat_template";
    spdlog::warn("{}: no tokenizer.chat_template in the file; the chat route uses graft's default (ChatML)",
                 pipeline.profile().model.filename().string());
    auto parsed = chat::ChatTemplate::parse(kDefaultChatTemplate);
    ctx.chat_template = std::make_shared<const chat::ChatTemplate>(std::get<chat::ChatTemplate>(parsed));
  }
  ctx.tool_format = tool_format_of(template_text.value_or(kDefaultChatTemplate));
  // The tags a chat answer's parser reads, as the vocabulary's tokens (rendered as text: they are
  // often control tokens).
  const auto tags = [&](std::span<const std::string_view> texts, std::vector<TokenId>& ids) {
    for (std::string_view tag : texts)
      if (const TokenId id = pipeline.tokenizer().find(std::string(tag)); id >= 0) ids.push_back(id);
  };
  const std::string_view think[] = {"<think>", "</think>"};
  tags(think, ctx.think_tags);
  tags(ctx.tool_format.markers(), ctx.tool_tags);
  if (!ctx.chat_template) spdlog::warn("the model's chat template does not parse ({}): the chat routes answer 500", ctx.chat_template_error);
  if (options.request_log == "-") {
    impl->log = stdout;
  } else if (!options.request_log.empty()) {
    impl->log = std::fopen(options.request_log.c_str(), "a");
    if (!impl->log) return Status(Errc::io_error, options.request_log + ": cannot open the request log for appending");
    impl->own_log = true;
  }
  impl->routes();
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

Expected<int> HttpServer::bind() {
  const ServerOptions& o = impl_->ctx.options;
  const int port = o.port == 0 ? impl_->http.bind_to_any_port(o.host) : (impl_->http.bind_to_port(o.host, o.port) ? o.port : -1);
  if (port < 0) return Status(Errc::io_error, fmt::format("cannot listen on {}:{} (in use, or not an address here)", o.host, o.port));
  // cpp-httplib 0.11 (Debian's build) listens with a backlog of 5: a burst of clients then waits
  // a second for TCP's SYN retry, or fails. Listening again on the bound socket raises it.
  if (impl_->listen_fd >= 0) ::listen(impl_->listen_fd, SOMAXCONN);
  impl_->port = port;
  return port;
}

void HttpServer::Impl::start_deadline() {
  const int seconds = ctx.options.read_deadline_seconds;
  if (seconds <= 0 || port <= 0) return;
  deadline_stop = false;
  deadline_thread = std::thread([this, seconds] {
    const auto deadline = std::chrono::seconds(seconds);
    // A sweep reads every descriptor of the process: four per deadline, at most one a second.
    const auto period = std::min<std::chrono::milliseconds>(std::chrono::seconds(1), std::chrono::milliseconds(deadline) / 4);
    std::unique_lock lock(deadline_m);
    while (!deadline_cv.wait_for(lock, period, [this] { return deadline_stop; }))
      if (const std::size_t n = busy.close_slow(port, deadline))
        spdlog::warn("closed {} connection(s) that took over {} s to send a request (--read-deadline)", n, seconds);
  });
}

void HttpServer::Impl::stop_deadline() {
  {
    std::lock_guard lock(deadline_m);
    deadline_stop = true;
  }
  deadline_cv.notify_all();
  if (deadline_thread.joinable()) deadline_thread.join();
}

void HttpServer::serve() {
  impl_->start_deadline();
  impl_->http.listen_after_bind();
  impl_->stop_deadline();
}

// cpp-httplib 0.11's connection threads finish what they answer; the connections idling between
// keep-alive requests are shut down, or serve() would wait out their 5 s timeout.
void HttpServer::stop() {
  impl_->http.stop();
  if (impl_->port > 0) impl_->busy.close_idle(impl_->port);
}

}  // namespace graft::server
