#include "server/chat_page.hpp"

#include <httplib.h>

namespace graft::server {

namespace {

std::string_view content_type(std::string_view path) {
  auto ends = [&](std::string_view ext) { return path.size() >= ext.size() && path.substr(path.size() - ext.size()) == ext; };
  if (ends(".html")) return "text/html; charset=utf-8";
  if (ends(".js")) return "application/javascript; charset=utf-8";
  if (ends(".css")) return "text/css; charset=utf-8";
  if (ends(".svg")) return "image/svg+xml";
  return "application/octet-stream";
}

// The URL a file is served at: index.html at "/", the others at their own name.
std::string_view route(const WebFile& f) { return f.path == "/index.html" ? std::string_view("/") : f.path; }

}  // namespace

void register_chat_page(httplib::Server& http) {
  for (std::size_t i = 0; i < kWebFileCount; ++i) {
    const WebFile& f = kWebFiles[i];
    const std::string type(content_type(f.path));
    http.Get(std::string(route(f)), [&f, type](const httplib::Request&, httplib::Response& res) {
      // Only this server's own origin, for everything: the page fetches nothing from elsewhere.
      res.set_header("Content-Security-Policy",
                     "default-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
                     "frame-ancestors 'none'");
      res.set_header("X-Content-Type-Options", "nosniff");
      res.set_header("Cache-Control", "no-cache");  // a rebuilt binary's page is seen at once
      res.set_content(f.data.data(), f.data.size(), type.c_str());
    });
  }
}

bool is_chat_page_request(const httplib::Request& req) {
  if (req.method != "GET" && req.method != "HEAD") return false;
  for (std::size_t i = 0; i < kWebFileCount; ++i)
    if (req.path == route(kWebFiles[i])) return true;
  return false;
}

}  // namespace graft::server
