#pragma once
// The HTTP/1.1 wire format of HttpServerBase (controller/http_server_base.h): a request's head
// parsed into httplib's Request, an answer framed as bytes. Pure: no sockets, no clock. Internal
// to the servers of controller/ (docs/operator.md, "Endpoints", says what they accept).

#include <httplib.h>

#include <cstddef>
#include <string>
#include <string_view>

namespace tfjob::controller::http_wire {

inline constexpr std::size_t kMaxTargetBytes = 8192;  // a longer request target is refused: 414

bool EqualsIgnoreCase(std::string_view a, std::string_view b);
// Whether a comma-separated header value lists `token` (case-insensitive), as Connection does.
bool ListsToken(std::string_view value, std::string_view token);
// Parses a request head (request line and header lines, CR LF each, without the empty line) into
// req; 0 when it is well formed, else the status to refuse it with (400, 414, 505).
int ParseHead(std::string_view head, httplib::Request& req);
// The Content-Length, or -1 when there is none; 400 (in *status) when it is malformed or there
// are two different ones.
long long ContentLength(const httplib::Request& req, int* status);
// Whether a request of `method` may carry a body the server must read or skip.
bool ExpectsBody(const std::string& method);
// The reason phrase of `status`, or "" for one the servers never answer with.
const char* Reason(int status);
// res as bytes: status line, its headers but the framing ones, then Content-Length and
// Connection (keep-alive: Keep-Alive with `idle_seconds` and the `left` requests), then the body
// (not for HEAD).
std::string FormatAnswer(const httplib::Response& res, bool head_only, bool close, long idle_seconds, std::size_t left);

}  // namespace tfjob::controller::http_wire
