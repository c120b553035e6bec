// Answers for clients that half-close: a client may shut down its sending side once its request
// is out (HTTP/1.1 allows it; `nc -N`, some proxies and scripts do) and still read the answer.
// cpp-httplib 0.11 (Debian's build) takes a socket whose peer sent its FIN for a dead one and
// refuses to write to it: such a client got no answer, while the log said 200. This writes the
// answer itself on such a connection (status line, headers, the body or the chunked stream), with
// "Connection: close", then shuts the sending side down, so that httplib's own write, which follows,
// cannot add a byte. A peer that had closed for good answers the first bytes with a reset: the
// writes after it fail, and a stream's job is cancelled as for any client that went away.
//
// Limit: a FIN that arrives once httplib has begun writing a stream (after the headers) still ends
// that stream, as a client that went away.
#pragma once

namespace httplib {
struct Request;
struct Response;
}  // namespace httplib

namespace graft::server {

// Called as the post-routing handler, once the answer's headers are final: when the client of `req`
// has sent its FIN, writes `res` on its socket and takes the stream's content provider out of it
// (httplib must not run it a second time). Returns whether it wrote.
bool reply_if_half_closed(const httplib::Request& req, httplib::Response& res);

}  // namespace graft::server
