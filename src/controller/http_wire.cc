#include "controller/http_wire.h"

#include <algorithm>
#include <cctype>
#include <string>

namespace tfjob::controller::http_wire {

namespace {

bool IsDigit(char c) {
  return c >= '0' && c <= '9';
}

bool IsTokenChar(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool IsToken(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), IsTokenChar);
}

}  // namespace

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

}  // namespace

// Whether a comma-separated header value lists `token` (case-insensitive), as Connection does.
bool ListsToken(std::string_view value, std::string_view token) {
  while (!value.empty()) {
    auto comma = value.find(',');
    if (EqualsIgnoreCase(Trim(value.substr(0, comma)), token)) return true;
    if (comma == std::string_view::npos) break;
    value.remove_prefix(comma + 1);
  }
  return false;
}

namespace {

// The next line of `head` (without its CR LF), taken off it.
std::string_view NextLine(std::string_view& head) {
  auto nl = head.find('\n');
  std::string_view line = head.substr(0, nl);
  head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

// A byte a request target may hold: no space, no control character.
bool IsTargetChar(char c) {
  return static_cast<unsigned char>(c) > 0x20 && c != 0x7f;
}

// A byte a header value may hold: no control character but tab.
bool IsFieldValueChar(char c) {
  return (static_cast<unsigned char>(c) >= 0x20 || c == '\t') && c != 0x7f;
}

// Parses "METHOD TARGET VERSION" into req; 0, or the status to refuse it with.
int ParseRequestLine(std::string_view line, httplib::Request& req) {
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return 400;
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  if (!IsToken(method) || target.empty() || !std::all_of(target.begin(), target.end(), IsTargetChar)) return 400;
  if (target.size() > kMaxTargetBytes) return 414;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return version.starts_with("HTTP/") ? 505 : 400;
  req.method = std::string(method);
  req.target = std::string(target);
  req.path = std::string(target.substr(0, target.find('?')));
  req.version = std::string(version);
  return 0;
}

// Parses "Name: value" into req's headers; 0, or 400.
int ParseHeaderLine(std::string_view line, httplib::Request& req) {
  auto colon = line.find(':');
  if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) return 400;  // obs-fold too
  std::string_view value = Trim(line.substr(colon + 1));
  if (!std::all_of(value.begin(), value.end(), IsFieldValueChar)) return 400;
  req.headers.emplace(std::string(line.substr(0, colon)), std::string(value));
  return 0;
}

}  // namespace

// Parses a request head into req; 0 when it is well formed, else the status to refuse it with.
int ParseHead(std::string_view head, httplib::Request& req) {
  if (int status = ParseRequestLine(NextLine(head), req); status != 0) return status;
  for (std::string_view line = NextLine(head); !line.empty(); line = NextLine(head))
    if (int status = ParseHeaderLine(line, req); status != 0) return status;
  return 0;
}

// The Content-Length, or -1 when there is none; 400 (in *status) when it is malformed or there
// are two different ones.
long long ContentLength(const httplib::Request& req, int* status) {
  std::size_t count = req.get_header_value_count("Content-Length");
  if (count == 0) return -1;
  std::string first = req.get_header_value("Content-Length");
  for (std::size_t i = 1; i < count; ++i)
    if (req.get_header_value("Content-Length", i) != first) *status = 400;
  if (first.empty() || first.size() > 18 || !std::all_of(first.begin(), first.end(), IsDigit)) *status = 400;
  return *status == 0 ? std::stoll(first) : -1;
}

bool ExpectsBody(const std::string& method) {
  return method == "POST" || method == "PUT" || method == "PATCH" || method == "DELETE" || method == "PRI";
}

namespace {

struct ReasonPhrase {
  int status;
  const char* text;
};
// The statuses the servers answer with (handlers' included).
constexpr ReasonPhrase kReasonPhrases[] = {
    {100, "Continue"},
    {200, "OK"},
    {201, "Created"},
    {204, "No Content"},
    {400, "Bad Request"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {411, "Length Required"},
    {413, "Payload Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {503, "Service Unavailable"},
    {505, "HTTP Version Not Supported"},
};

}  // namespace

// The reason phrase of `status`, or "" for one not in the table.
const char* Reason(int status) {
  for (const auto& r : kReasonPhrases)
    if (r.status == status) return r.text;
  return "";
}

namespace {

bool IsFramingHeader(const std::string& name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "Connection") || EqualsIgnoreCase(name, "Keep-Alive");
}

}  // namespace

// res as bytes: status line, its headers but the framing ones, then Content-Length and
// Connection (keep-alive: Keep-Alive with `idle_seconds` and the `left` requests), then the body
// (not for HEAD).
std::string FormatAnswer(const httplib::Response& res, bool head_only, bool close, long idle_seconds,
                         std::size_t left) {
  std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + Reason(res.status) + "\r\n";
  for (const auto& [name, value] : res.headers)
    if (!IsFramingHeader(name)) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
  out += close ? std::string("Connection: close\r\n")
               : "Connection: keep-alive\r\nKeep-Alive: timeout=" + std::to_string(idle_seconds) +
                     ", max=" + std::to_string(left) + "\r\n";
  out += "\r\n";
  if (!head_only) out += res.body;
  return out;
}

}  // namespace tfjob::controller::http_wire
