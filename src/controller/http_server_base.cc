#include "controller/http_server_base.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <httplib.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <deque>
#include <string_view>
#include <vector>

#include "controller/metrics.h"

namespace tfjob::controller {
namespace {

using Clock = HttpServerBase::Connection::Clock;

constexpr std::size_t kMaxTargetBytes = 8192;  // longer: 414
constexpr std::string_view kBusyAnswer =
    "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

// A TCP connection, plain or TLS, non-blocking underneath; every wait has a deadline and ends
// early when the server stops.
class SocketConnection : public HttpServerBase::Connection {
 public:
  SocketConnection(int fd, SSL* ssl, const std::atomic<bool>& stopping) : fd_(fd), ssl_(ssl), stopping_(stopping) {}

  bool Handshake(Clock::time_point deadline) {
    for (;;) {
      int r = SSL_accept(ssl_);
      if (r == 1) return true;
      if (!WaitFor(SSL_get_error(ssl_, r), deadline)) return false;
    }
  }

  bool WaitReadable(Clock::time_point deadline) override {
    if (ssl_ != nullptr && SSL_pending(ssl_) > 0) return true;
    return Poll(POLLIN, deadline);
  }

  long Read(char* buf, std::size_t n, Clock::time_point deadline) override {
    int chunk = static_cast<int>(std::min<std::size_t>(n, 1 << 20));
    for (;;) {
      if (ssl_ != nullptr) {
        int r = SSL_read(ssl_, buf, chunk);
        if (r > 0) return r;
        int e = SSL_get_error(ssl_, r);
        if (e == SSL_ERROR_ZERO_RETURN) return 0;
        if (!WaitFor(e, deadline)) return -1;
      } else {
        ssize_t r = ::recv(fd_, buf, chunk, 0);
        if (r >= 0) return r;
        if (errno == EINTR) continue;
        if (errno != EAGAIN && errno != EWOULDBLOCK) return -1;
        if (!Poll(POLLIN, deadline)) return -1;
      }
    }
  }

  bool Write(const char* buf, std::size_t n, Clock::time_point deadline) override {
    while (n > 0) {
      int chunk = static_cast<int>(std::min<std::size_t>(n, 1 << 20));
      long written;
      if (ssl_ != nullptr) {
        int r = SSL_write(ssl_, buf, chunk);
        if (r <= 0) {
          if (!WaitFor(SSL_get_error(ssl_, r), deadline)) return false;
          continue;
        }
        written = r;
      } else {
        ssize_t r = ::send(fd_, buf, chunk, MSG_NOSIGNAL);
        if (r < 0) {
          if (errno == EINTR) continue;
          if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
          if (!Poll(POLLOUT, deadline)) return false;
          continue;
        }
        written = r;
      }
      buf += written;
      n -= static_cast<std::size_t>(written);
    }
    return true;
  }

  void Addresses(std::string& remote_ip, int& remote_port, std::string& local_ip, int& local_port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    remote_ip = local_ip = "";
    remote_port = local_port = 0;
    if (getpeername(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) Format(addr, remote_ip, remote_port);
    len = sizeof addr;
    if (getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) Format(addr, local_ip, local_port);
  }

  int fd() const override { return fd_; }

 private:
  static void Format(const sockaddr_storage& addr, std::string& ip, int& port) {
    char text[INET6_ADDRSTRLEN] = {0};
    if (addr.ss_family == AF_INET) {
      const auto* a = reinterpret_cast<const sockaddr_in*>(&addr);
      inet_ntop(AF_INET, &a->sin_addr, text, sizeof text);
      port = ntohs(a->sin_port);
    } else if (addr.ss_family == AF_INET6) {
      const auto* a = reinterpret_cast<const sockaddr_in6*>(&addr);
      inet_ntop(AF_INET6, &a->sin6_addr, text, sizeof text);
      port = ntohs(a->sin6_port);
    }
    ip = text;
  }

  // After an OpenSSL call returned `error`: waits for what it needs; false on a real error.
  bool WaitFor(int error, Clock::time_point deadline) {
    if (error == SSL_ERROR_WANT_READ) return Poll(POLLIN, deadline);
    if (error == SSL_ERROR_WANT_WRITE) return Poll(POLLOUT, deadline);
    ERR_clear_error();
    return false;
  }

  // Polls in slices so that Stop is noticed within 100 ms.
  bool Poll(short events, Clock::time_point deadline) {
    for (;;) {
      if (stopping_) return false;
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd_, events, 0};
      int r = ::poll(&p, 1, static_cast<int>(std::min<long>(left, 100)));
      if (r > 0) return true;  // ready, or an error/hang-up the next call reports
      if (r < 0 && errno != EINTR) return false;
    }
  }

  int fd_;
  SSL* ssl_;
  const std::atomic<bool>& stopping_;
};

// The bytes of one connection through a buffer: the head of each request, then its body.
class Reader {
 public:
  explicit Reader(HttpServerBase::Connection& c) : c_(c) {}

  bool Buffered() const { return pos_ < buf_.size(); }
  bool timed_out() const { return timed_out_; }

  enum class Head { kOk, kClosed, kTooLarge, kCut };
  // The next request's line and headers (up to and including the blank line), at most
  // `max_bytes`, by `deadline`. kClosed: the peer ended the connection before a byte of it.
  Head ReadHead(std::size_t max_bytes, Clock::time_point deadline, std::string_view* head) {
    buf_.erase(0, pos_);
    pos_ = 0;
    std::size_t scanned = 0;
    for (;;) {
      if (DropEmptyLines()) scanned = 0;
      if (std::size_t end = FindHeadEnd(scanned); end != 0) {
        if (end > max_bytes) return Head::kTooLarge;
        *head = std::string_view(buf_).substr(0, end);
        pos_ = end;
        return Head::kOk;
      }
      scanned = buf_.size() >= 2 ? buf_.size() - 2 : 0;
      if (buf_.size() > max_bytes) return Head::kTooLarge;
      if (!Fill(deadline)) return buf_.empty() && !timed_out_ ? Head::kClosed : Head::kCut;
    }
  }

  // Exactly n body bytes into *body, by `deadline`; `store` false throws them away.
  bool ReadBody(std::size_t n, Clock::time_point deadline, std::string* body, bool store) {
    if (store) body->reserve(n);
    while (n > 0) {
      if (!Buffered()) {
        buf_.clear();
        pos_ = 0;
        if (!Fill(deadline)) return false;
      }
      std::size_t k = std::min(n, buf_.size() - pos_);
      if (store) body->append(buf_, pos_, k);
      pos_ += k;
      n -= k;
    }
    return true;
  }

 private:
  // Drops the empty lines before a request line (RFC 9112 section 2.2); whether there were any.
  bool DropEmptyLines() {
    while (pos_ < buf_.size() && (buf_[pos_] == '\r' || buf_[pos_] == '\n')) ++pos_;
    if (pos_ == 0) return false;
    buf_.erase(0, pos_);
    pos_ = 0;
    return true;
  }

  // Just past the blank line that ends the head, looking for it from buf_[from]; 0 when it has
  // not arrived yet.
  std::size_t FindHeadEnd(std::size_t from) const {
    for (std::size_t i = from; i < buf_.size(); ++i) {
      if (buf_[i] != '\n') continue;
      if (i + 1 < buf_.size() && buf_[i + 1] == '\n') return i + 2;
      if (i + 2 < buf_.size() && buf_[i + 1] == '\r' && buf_[i + 2] == '\n') return i + 3;
    }
    return 0;
  }

  bool Fill(Clock::time_point deadline) {
    char chunk[16 * 1024];
    long n = c_.Read(chunk, sizeof chunk, deadline);
    if (n <= 0) {
      if (n < 0 && Clock::now() >= deadline) timed_out_ = true;
      return false;
    }
    buf_.append(chunk, static_cast<std::size_t>(n));
    return true;
  }

  HttpServerBase::Connection& c_;
  std::string buf_;
  std::size_t pos_ = 0;
  bool timed_out_ = false;
};

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

bool EqualsIgnoreCase(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

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

// The reason phrase of `status`, or "" for one not in the table.
const char* Reason(int status) {
  for (const auto& r : kReasonPhrases)
    if (r.status == status) return r.text;
  return "";
}

bool IsFramingHeader(const std::string& name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "Connection") || EqualsIgnoreCase(name, "Keep-Alive");
}

// Splits "host:port" ("[host]:port" for IPv6; no host: all interfaces) for getaddrinfo.
Status SplitAddress(const std::string& address, std::string* host, std::string* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("address \"" + address + "\" is not host:port");
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  if (host->empty()) *host = "0.0.0.0";
  if (port->empty() || port->size() > 5 || !std::all_of(port->begin(), port->end(), IsDigit) ||
      std::stoi(*port) > 65535)
    return InvalidArgumentError("address \"" + address + "\" has no valid port");
  return OkStatus();
}

// A non-blocking socket bound to and listening on the first of `addresses` that takes it, or -1
// (*error tells why the last one failed).
int ListenOnFirst(const addrinfo* addresses, int backlog, std::string* error) {
  for (const addrinfo* a = addresses; a != nullptr; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, backlog) == 0) return fd;
    *error = std::strerror(errno);
    ::close(fd);
  }
  return -1;
}

// The port a socket is bound to.
int LocalPort(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

// The answer of the route for req: the handler's (200 unless it sets a status; 500 when it
// throws), else 404, or 405 with Allow when the path is served for other methods.
httplib::Response Route(const HttpRoutes& routes, const httplib::Request& req) {
  httplib::Response res;
  bool path_known = false;
  const HttpRoutes::Handler* handler = routes.Find(req.method, req.path, &path_known);
  if (handler == nullptr) {
    res.status = path_known ? 405 : 404;
    if (path_known) res.set_header("Allow", routes.Allowed(req.path));
    return res;
  }
  try {
    (*handler)(req, res);
    if (res.status == -1) res.status = 200;
  } catch (const std::exception&) {
    res = httplib::Response();
    res.status = 500;
  }
  return res;
}

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

}  // namespace

HttpRoutes& HttpRoutes::Get(const std::string& path, Handler handler) {
  by_path_[path]["GET"] = std::move(handler);
  return *this;
}

HttpRoutes& HttpRoutes::Post(const std::string& path, Handler handler) {
  by_path_[path]["POST"] = std::move(handler);
  return *this;
}

const HttpRoutes::Handler* HttpRoutes::Find(const std::string& method, const std::string& path,
                                            bool* path_known) const {
  auto p = by_path_.find(path);
  *path_known = p != by_path_.end();
  if (!*path_known) return nullptr;
  auto m = p->second.find(method == "HEAD" ? "GET" : method);
  return m == p->second.end() ? nullptr : &m->second;
}

std::string HttpRoutes::Allowed(const std::string& path) const {
  std::string out;
  auto p = by_path_.find(path);
  if (p == by_path_.end()) return out;
  for (const auto& [method, handler] : p->second) {
    out += out.empty() ? "" : ", ";
    out += method;
    if (method == "GET") out += ", HEAD";
  }
  return out;
}

// The connection threads: one per connection being served, created when none is free, at most
// `max_threads`; up to `max_queued` more connections wait for one, and Offer refuses the next.
class HttpServerBase::Pool {
 public:
  Pool(HttpServerBase* owner, std::size_t max_threads, std::size_t max_queued)
      : owner_(owner), max_threads_(std::max<std::size_t>(max_threads, 1)), max_queued_(max_queued) {}

  // Takes fd to serve, or false (the caller closes it) when the threads and the queue are full.
  bool Offer(int fd) {
    MutexLock lock(mu_);
    if (shutdown_ || held_ >= max_threads_ + max_queued_) return false;
    ++held_;
    owner_->open_ = held_;
    queued_.push_back(fd);
    if (queued_.size() > idle_ && threads_.size() < max_threads_)
      threads_.emplace_back([this] { Work(); });
    else
      cv_.notify_one();
    return true;
  }

  // Joins the threads (each ends when its connection does: Stop cuts them) and closes the
  // connections still queued.
  void Shutdown() {
    std::vector<std::jthread> threads;
    {
      MutexLock lock(mu_);
      shutdown_ = true;
      threads.swap(threads_);
    }
    cv_.notify_all();
    for (auto& t : threads) t.join();
    MutexLock lock(mu_);
    for (int fd : queued_) ::close(fd);
    held_ -= queued_.size();
    owner_->open_ = held_;
    queued_.clear();
  }

 private:
  void Work() {
    // A write to a peer that has gone raises SIGPIPE (OpenSSL writes with write(2)); these
    // threads take it as an error return instead.
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &set, nullptr);
    mu_.lock();
    for (;;) {
      ++idle_;
      cv_.wait(mu_, [&]() TFJOB_REQUIRES(mu_) { return shutdown_ || !queued_.empty(); });
      --idle_;
      if (shutdown_) break;
      int fd = queued_.front();
      queued_.pop_front();
      mu_.unlock();
      owner_->ServeSocket(fd);
      mu_.lock();
      --held_;
      owner_->open_ = held_;
    }
    mu_.unlock();
  }

  HttpServerBase* const owner_;
  const std::size_t max_threads_, max_queued_;
  Mutex mu_;
  std::condition_variable_any cv_;
  std::deque<int> queued_ TFJOB_GUARDED_BY(mu_);
  std::vector<std::jthread> threads_ TFJOB_GUARDED_BY(mu_);
  std::size_t idle_ TFJOB_GUARDED_BY(mu_) = 0;
  std::size_t held_ TFJOB_GUARDED_BY(mu_) = 0;  // queued or being served
  bool shutdown_ TFJOB_GUARDED_BY(mu_) = false;
};

Counter& RefusedConnectionsCounter(Registry& registry, const std::string& server) {
  return registry
      .AddCounter("tfjob_http_refused_connections_total",
                  "Connections closed at once because all the server's threads were busy and its queue was full.",
                  {"server"})
      .With({server});
}

HttpServerBase::HttpServerBase(HttpServerLimits limits, SSL_CTX* tls)
    : limits_(limits),
      tls_(tls),
      pool_(std::make_unique<Pool>(this, limits.max_threads, limits.max_queued_connections)) {}

HttpServerBase::~HttpServerBase() {
  Stop();
}

Status HttpServerBase::Start(const std::string& address) {
  std::string host, port_text;
  if (Status s = SplitAddress(address, &host, &port_text); !s.ok()) return s;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); e != 0)
    return InvalidArgumentError("address \"" + address + "\": " + gai_strerror(e));
  std::string error = "no address";
  if (listen_fd_ < 0) listen_fd_ = ListenOnFirst(found, limits_.backlog, &error);
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return UnavailableError("cannot bind " + address + ": " + error);
  port_ = LocalPort(listen_fd_);
  acceptor_ = std::jthread([this](std::stop_token stop) { Accept(stop); });
  return OkStatus();
}

void HttpServerBase::Accept(std::stop_token stop) {
  while (!stop.stop_requested() && !stopping_) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;  // slices, so that Stop is noticed within 100 ms
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors or memory: the connection stays in the backlog; try again shortly.
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      continue;
    }
    if (!pool_->Offer(fd)) Refuse(fd);
  }
}

void HttpServerBase::Refuse(int fd) {
  ++refused_;
  if (refused_counter_ != nullptr) refused_counter_->Inc();
  // A plain HTTP client learns why; a TLS one sees its handshake end.
  if (tls_ == nullptr) (void)::send(fd, kBusyAnswer.data(), kBusyAnswer.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  ::close(fd);
}

void HttpServerBase::Stop() {
  stopping_ = true;
  if (acceptor_.joinable()) {
    acceptor_.request_stop();
    acceptor_.join();
  }
  if (listen_fd_ >= 0) {
    ::close(listen_fd_);
    listen_fd_ = -1;
  }
  { MutexLock lock(body_mu_); }
  body_cv_.notify_all();
  if (pool_) pool_->Shutdown();
}

void HttpServerBase::ServeSocket(int fd) {
  ++connections_;
  SSL* ssl = nullptr;
  bool ok = true;
  if (tls_ != nullptr) {
    ssl = SSL_new(tls_);
    ok = ssl != nullptr && SSL_set_fd(ssl, fd) == 1;
    if (ok) SSL_set_mode(ssl, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
  }
  SocketConnection connection(fd, ssl, stopping_);
  if (ok && ssl != nullptr) {
    auto deadline = Clock::now() + limits_.request_timeout;
    ok = connection.Handshake(deadline);
    if (!ok && Clock::now() >= deadline) ++cut_;
  }
  if (ok) Serve(connection);
  if (ssl != nullptr) {
    if (ok) SSL_shutdown(ssl);  // one close_notify, not waiting for the peer's
    SSL_free(ssl);
  }
  ERR_clear_error();
  ::shutdown(fd, SHUT_RDWR);
  ::close(fd);
}

bool HttpServerBase::ReserveBody(std::size_t bytes) {
  MutexLock lock(body_mu_);
  if (!body_cv_.wait_for(body_mu_, limits_.request_timeout,
                         [&]() TFJOB_REQUIRES(body_mu_) {
                           return stopping_ || body_bytes_ + bytes <= limits_.max_body_bytes_in_flight;
                         }) ||
      stopping_)
    return false;
  body_bytes_ += bytes;
  return true;
}

void HttpServerBase::ReleaseBody(std::size_t bytes) {
  {
    MutexLock lock(body_mu_);
    body_bytes_ -= bytes;
  }
  body_cv_.notify_all();
}

// One connection being served (HttpServerBase::Serve): its requests one after the other, each
// step a function; a step that returns false has ended the connection (after an answer, when the
// request deserves one).
class HttpServerBase::Session {
 public:
  Session(HttpServerBase& server, Connection& connection)
      : server_(server),
        limits_(server.limits_),
        connection_(connection),
        reader_(connection),
        idle_seconds_(
            std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count())) {
    connection.Addresses(remote_ip_, remote_port_, local_ip_, local_port_);
  }

  // The request after `served` others; whether the connection goes on to the next one.
  bool ServeOne(std::size_t served) {
    if (!AwaitRequest()) return false;
    const auto deadline = Clock::now() + limits_.request_timeout;
    httplib::Request req;
    if (!ReadHead(deadline, req)) return false;
    const bool close = ClosesAfter(req, served);
    std::size_t body_bytes = 0;
    if (!CheckFraming(req, &body_bytes) || !ReadBody(req, body_bytes, deadline)) return false;
    httplib::Response res = Route(server_.routes_, req);
    ReleaseReserved();
    const bool head_only = req.method == "HEAD";
    req = httplib::Request();  // the body goes before the answer is written
    return Write(res, head_only, close || server_.stopping_, limits_.max_requests_per_connection - served - 1) &&
           !close;
  }

 private:
  // Waits up to idle_timeout for the first byte of a request.
  bool AwaitRequest() {
    if (reader_.Buffered() || connection_.WaitReadable(Clock::now() + limits_.idle_timeout)) return true;
    if (!server_.stopping_) ++server_.cut_;
    return false;
  }

  // Reads the request line and headers by `deadline`, within max_header_bytes, and parses them
  // into req.
  bool ReadHead(Clock::time_point deadline, httplib::Request& req) {
    std::string_view head;
    switch (reader_.ReadHead(limits_.max_header_bytes, deadline, &head)) {
      case Reader::Head::kClosed: return false;
      case Reader::Head::kCut: CountIfTimedOut(); return false;
      case Reader::Head::kTooLarge:
        ++server_.cut_;
        return Refuse(431,
                      "the request line and headers are over " + std::to_string(limits_.max_header_bytes) + " bytes\n");
      case Reader::Head::kOk: break;
    }
    return Parse(head, req);
  }

  bool Parse(std::string_view head, httplib::Request& req) {
    int status = ParseHead(head, req);
    if (status == 400) return Refuse(400, "malformed request\n");
    if (status == 414) return Refuse(414, "the request target is over " + std::to_string(kMaxTargetBytes) + " bytes\n");
    if (status != 0) return Refuse(status, "only HTTP/1.0 and HTTP/1.1 are served\n");
    req.remote_addr = remote_ip_;
    req.remote_port = remote_port_;
    req.local_addr = local_ip_;
    req.local_port = local_port_;
    return true;
  }

  // Whether the connection closes after this request's answer: its last one, or the client's wish.
  bool ClosesAfter(const httplib::Request& req, std::size_t served) const {
    const std::string connection_header = req.get_header_value("Connection");
    return served + 1 == limits_.max_requests_per_connection || ListsToken(connection_header, "close") ||
           (req.version == "HTTP/1.0" && !ListsToken(connection_header, "keep-alive"));
  }

  // Bodies that cannot be bounded before they are read are refused unread; *body_bytes: the
  // Content-Length (0 without one).
  bool CheckFraming(const httplib::Request& req, std::size_t* body_bytes) {
    int status = 0;
    long long length = ContentLength(req, &status);
    if (status != 0) return Refuse(400, "malformed Content-Length\n");
    if (req.has_header("Transfer-Encoding"))
      return Refuse(411, "a body needs a Content-Length (Transfer-Encoding is not accepted)\n");
    if (ExpectsBody(req.method) && length < 0) return Refuse(411, "a body needs a Content-Length\n");
    std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && !EqualsIgnoreCase(encoding, "identity"))
      return Refuse(415, "compressed bodies are not accepted\n");
    *body_bytes = length > 0 ? static_cast<std::size_t>(length) : 0;
    return true;
  }

  // Reads the body into req.body by `deadline`: within max_body_bytes, with room in
  // max_body_bytes_in_flight (reserved until ReleaseReserved), after a 100 Continue when the
  // client waits for one.
  bool ReadBody(httplib::Request& req, std::size_t body_bytes, Clock::time_point deadline) {
    const bool expects_continue =
        req.version == "HTTP/1.1" && ListsToken(req.get_header_value("Expect"), "100-continue");
    if (body_bytes > limits_.max_body_bytes) return RefuseTooLarge(body_bytes, expects_continue, deadline);
    if (ExpectsBody(req.method) && limits_.max_body_bytes_in_flight > 0) {
      if (!server_.ReserveBody(body_bytes)) return Refuse(503, "too many requests at once; try again\n");
      reserved_ = body_bytes;
    }
    if (expects_continue && body_bytes > 0 && !WriteContinue()) {
      ReleaseReserved();
      return false;
    }
    if (body_bytes > 0 && !reader_.ReadBody(body_bytes, deadline, &req.body, true)) {
      ReleaseReserved();
      CountIfTimedOut();
      return false;
    }
    return true;
  }

  // Answered at once; the body is then read and thrown away (unless the client waits for a 100
  // Continue), so that closing does not reset the connection under the answer.
  bool RefuseTooLarge(std::size_t body_bytes, bool expects_continue, Clock::time_point deadline) {
    Refuse(413, "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes\n");
    if (!expects_continue) reader_.ReadBody(body_bytes, deadline, nullptr, false);
    return false;
  }

  bool WriteContinue() {
    constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
    return connection_.Write(kContinue.data(), kContinue.size(), Clock::now() + limits_.write_timeout);
  }

  void ReleaseReserved() {
    if (reserved_ > 0) server_.ReleaseBody(reserved_);
    reserved_ = 0;
  }

  // A read that ran out of time (not one the server's stop ended) cuts the connection.
  void CountIfTimedOut() {
    if (reader_.timed_out() && !server_.stopping_) ++server_.cut_;
  }

  // Writes res with the framing headers (Keep-Alive: `left` more requests); false when it cannot
  // be written.
  bool Write(const httplib::Response& res, bool head_only, bool close, std::size_t left) {
    std::string out = FormatAnswer(res, head_only, close, idle_seconds_, left);
    return connection_.Write(out.data(), out.size(), Clock::now() + limits_.write_timeout);
  }

  // Answers `status` with the text `why` and closes; false, to end the connection.
  bool Refuse(int status, const std::string& why) {
    httplib::Response res;
    res.status = status;
    res.set_content(why, "text/plain");
    Write(res, false, true, 0);
    return false;
  }

  HttpServerBase& server_;
  const HttpServerLimits& limits_;
  Connection& connection_;
  Reader reader_;
  const long idle_seconds_;
  std::string remote_ip_, local_ip_;
  int remote_port_ = 0, local_port_ = 0;
  std::size_t reserved_ = 0;  // of max_body_bytes_in_flight, by the current request
};

void HttpServerBase::Serve(Connection& connection) {
  Session session(*this, connection);
  for (std::size_t served = 0; served < limits_.max_requests_per_connection && !stopping_; ++served)
    if (!session.ServeOne(served)) return;
}

}  // namespace tfjob::controller
