#pragma once
// The chat page `graft serve` answers at `/` (docs/serve.md, "The chat page"): index.html, chat.js
// and chat.css from core/server/web/, embedded into the binary at build time by
// web/embed_files.cmake. Nothing is read from disk or fetched elsewhere at run time.

#include <cstddef>
#include <string>
#include <string_view>

namespace httplib {
class Server;
struct Request;
}  // namespace httplib

namespace graft::server {

// One embedded file: its URL path ("/chat.js") and its bytes.
struct WebFile {
  std::string_view path;
  std::string_view data;
};
// Defined in the generated web_files.cpp.
extern const WebFile kWebFiles[];
extern const std::size_t kWebFileCount;

// Registers GET / (index.html) and GET /<file> for the page's other files.
void register_chat_page(httplib::Server& http);

// True for a GET (or HEAD) of one of the page's static routes: the page holds no data, so it is
// served without the API key (the API calls it makes send the key the user typed).
bool is_chat_page_request(const httplib::Request& req);

}  // namespace graft::server
