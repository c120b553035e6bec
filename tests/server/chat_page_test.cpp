// The chat page of `graft serve` (core/server/chat_page.cpp): the embedded files are the ones in
// core/server/web/, byte for byte, served with their types at their routes, and without the API
// key (the page holds no data). tests/web drives the page itself in a browser.
#include <gtest/gtest.h>
#include <httplib.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "engine/pipeline.hpp"
#include "server/chat_page.hpp"
#include "server/http_server.hpp"

namespace fs = std::filesystem;
using namespace graft;

namespace {

const fs::path kWeb = fs::path(GRAFT_SOURCE_DIR) / "core" / "server" / "web";

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

httplib::Request request(const char* method, const char* path) {
  httplib::Request r;
  r.method = method;
  r.path = path;
  return r;
}

}  // namespace

TEST(ChatPage, EmbedsTheWebFolderByteForByte) {
  ASSERT_EQ(server::kWebFileCount, 3u);
  for (std::size_t i = 0; i < server::kWebFileCount; ++i) {
    const server::WebFile& f = server::kWebFiles[i];
    const std::string on_disk = read_file(kWeb / f.path.substr(1));
    ASSERT_FALSE(on_disk.empty()) << f.path;
    EXPECT_EQ(f.data, on_disk) << f.path;
  }
}

TEST(ChatPage, ServesItsFilesWithTheirTypes) {
  httplib::Server http;
  server::register_chat_page(http);
  const int port = http.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread t([&] { http.listen_after_bind(); });
  httplib::Client c("127.0.0.1", port);
  for (const auto& [path, file, type] :
       {std::tuple{"/", "index.html", "text/html; charset=utf-8"},
        std::tuple{"/chat.js", "chat.js", "application/javascript; charset=utf-8"},
        std::tuple{"/chat.css", "chat.css", "text/css; charset=utf-8"}}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
    EXPECT_EQ(r->get_header_value("Content-Type"), type) << path;
    EXPECT_EQ(r->body, read_file(kWeb / file)) << path;
    EXPECT_EQ(r->get_header_value("Content-Security-Policy").rfind("default-src 'self';", 0), 0u) << path;
  }
  auto none = c.Get("/index.html");  // the page is at /, not under its file name
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 404);
  http.stop();
  t.join();
}

TEST(ChatPage, OnlyItsStaticRoutesAreExemptFromTheKey) {
  for (const char* path : {"/", "/chat.js", "/chat.css"}) {
    EXPECT_TRUE(server::is_chat_page_request(request("GET", path))) << path;
    EXPECT_TRUE(server::is_chat_page_request(request("HEAD", path))) << path;
    EXPECT_FALSE(server::is_chat_page_request(request("POST", path))) << path;
  }
  for (const char* path : {"/index.html", "/props", "/v1/models", "/chat.js/", "/favicon.ico", ""})
    EXPECT_FALSE(server::is_chat_page_request(request("GET", path))) << path;
}

TEST(ChatPage, IsServedWithoutTheApiKeyThatTheApiNeeds) {
  Profile profile = Profile::builtin();
  profile.model = fs::path(GRAFT_SOURCE_DIR) / "models" / "zoo-qwen3-4x256.gguf";
  profile.context = 64;
  profile.threads = 1;
  auto pipeline = Pipeline::build(profile, 256);
  ASSERT_TRUE(pipeline) << pipeline.status().message();
  server::ServerOptions o;
  o.port = 0;
  o.api_key = "sekrit";
  auto srv = server::HttpServer::create(**pipeline, o);
  ASSERT_TRUE(srv) << srv.status().message();
  auto port = (*srv)->bind();
  ASSERT_TRUE(port) << port.status().message();
  std::thread t([&] { (*srv)->serve(); });
  httplib::Client c("127.0.0.1", *port);
  for (const char* path : {"/", "/chat.js", "/chat.css"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200) << path;
  }
  for (const char* path : {"/props", "/index.html", "/favicon.ico"}) {
    auto r = c.Get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 401) << path;
  }
  auto post = c.Post("/", "{}", "application/json");
  ASSERT_TRUE(post);
  EXPECT_EQ(post->status, 401);
  auto props = c.Get("/props", {{"Authorization", "Bearer sekrit"}});
  ASSERT_TRUE(props);
  EXPECT_EQ(props->status, 200);
  (*srv)->stop();
  t.join();
}
