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
      // Empty lines before a request line are ignored (RFC 9112 section 2.2).
      while (pos_ < buf_.size() && (buf_[pos_] == '\r' || buf_[pos_] == '\n')) ++pos_;
      if (pos_ > 0) {
        buf_.erase(0, pos_);
        pos_ = 0;
        scanned = 0;
      }
      for (std::size_t i = scanned; i < buf_.size(); ++i) {
        if (buf_[i] != '\n') continue;
        std::size_t end = 0;
        if (i + 1 < buf_.size() && buf_[i + 1] == '\n') end = i + 2;
        if (i + 2 < buf_.size() && buf_[i + 1] == '\r' && buf_[i + 2] == '\n') end = i + 3;
        if (end == 0) continue;
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

// Parses a request head into req; 0 when it is well formed, else the status to refuse it with.
int ParseHead(std::string_view head, httplib::Request& req) {
  auto next_line = [&head]() {
    auto nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head.remove_prefix(nl == std::string_view::npos ? head.size() : nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return line;
  };
  std::string_view line = next_line();
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return 400;
  std::string_view method = line.substr(0, sp1), target = line.substr(sp1 + 1, sp2 - sp1 - 1),
                   version = line.substr(sp2 + 1);
  if (!IsToken(method) || target.empty()) return 400;
  for (char c : target)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f) return 400;
  if (target.size() > kMaxTargetBytes) return 414;
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return version.starts_with("HTTP/") ? 505 : 400;
  req.method = std::string(method);
  req.target = std::string(target);
  req.path = std::string(target.substr(0, target.find('?')));
  req.version = std::string(version);
  for (line = next_line(); !line.empty(); line = next_line()) {
    auto colon = line.find(':');
    if (colon == std::string_view::npos || !IsToken(line.substr(0, colon))) return 400;  // obs-fold too
    std::string_view value = Trim(line.substr(colon + 1));
    for (char c : value)
      if ((static_cast<unsigned char>(c) < 0x20 && c != '\t') || c == 0x7f) return 400;
    req.headers.emplace(std::string(line.substr(0, colon)), std::string(value));
  }
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

const char* Reason(int status) {
  switch (status) {
    case 100: return "Continue";
    case 200: return "OK";
    case 201: return "Created";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "";
  }
}

bool IsFramingHeader(const std::string& name) {
  return EqualsIgnoreCase(name, "Content-Length") || EqualsIgnoreCase(name, "Transfer-Encoding") ||
         EqualsIgnoreCase(name, "Connection") || EqualsIgnoreCase(name, "Keep-Alive");
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
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("address \"" + address + "\" is not host:port");
  std::string host = address.substr(0, colon), port_text = address.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') host = host.substr(1, host.size() - 2);
  if (host.empty()) host = "0.0.0.0";
  if (port_text.empty() || port_text.size() > 5 || !std::all_of(port_text.begin(), port_text.end(), IsDigit) ||
      std::stoi(port_text) > 65535)
    return InvalidArgumentError("address \"" + address + "\" has no valid port");
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int e = ::getaddrinfo(host.c_str(), port_text.c_str(), &hints, &found); e != 0)
    return InvalidArgumentError("address \"" + address + "\": " + gai_strerror(e));
  std::string error = "no address";
  for (addrinfo* a = found; a != nullptr && listen_fd_ < 0; a = a->ai_next) {
    int fd = ::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    int yes = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(fd, a->ai_addr, a->ai_addrlen) == 0 && ::listen(fd, limits_.backlog) == 0) {
      listen_fd_ = fd;
    } else {
      error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) return UnavailableError("cannot bind " + address + ": " + error);
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
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

void HttpServerBase::Serve(Connection& connection) {
  Reader reader(connection);
  std::string remote_ip, local_ip;
  int remote_port = 0, local_port = 0;
  connection.Addresses(remote_ip, remote_port, local_ip, local_port);
  const long idle_seconds =
      std::max<long>(1, std::chrono::duration_cast<std::chrono::seconds>(limits_.idle_timeout).count());

  // Writes res (status, headers, body) with the framing headers; false when it cannot be written.
  auto write = [&](const httplib::Response& res, bool head_only, bool close, std::size_t left) {
    std::string out = "HTTP/1.1 " + std::to_string(res.status) + " " + Reason(res.status) + "\r\n";
    for (const auto& [name, value] : res.headers)
      if (!IsFramingHeader(name)) out += name + ": " + value + "\r\n";
    out += "Content-Length: " + std::to_string(res.body.size()) + "\r\n";
    out += close ? std::string("Connection: close\r\n")
                 : "Connection: keep-alive\r\nKeep-Alive: timeout=" + std::to_string(idle_seconds) +
                       ", max=" + std::to_string(left) + "\r\n";
    out += "\r\n";
    if (!head_only) out += res.body;
    return connection.Write(out.data(), out.size(), Clock::now() + limits_.write_timeout);
  };
  auto refuse = [&](int status, const std::string& why) {
    httplib::Response res;
    res.status = status;
    res.set_content(why, "text/plain");
    write(res, false, true, 0);
  };

  for (std::size_t served = 0; served < limits_.max_requests_per_connection && !stopping_; ++served) {
    if (!reader.Buffered() && !connection.WaitReadable(Clock::now() + limits_.idle_timeout)) {
      if (!stopping_) ++cut_;
      return;
    }
    const auto deadline = Clock::now() + limits_.request_timeout;
    std::string_view head;
    switch (reader.ReadHead(limits_.max_header_bytes, deadline, &head)) {
      case Reader::Head::kClosed: return;
      case Reader::Head::kCut:
        if (reader.timed_out() && !stopping_) ++cut_;
        return;
      case Reader::Head::kTooLarge:
        ++cut_;
        return refuse(431,
                      "the request line and headers are over " + std::to_string(limits_.max_header_bytes) + " bytes\n");
      case Reader::Head::kOk: break;
    }
    httplib::Request req;
    int status = ParseHead(head, req);
    if (status == 400) return refuse(400, "malformed request\n");
    if (status == 414) return refuse(414, "the request target is over " + std::to_string(kMaxTargetBytes) + " bytes\n");
    if (status != 0) return refuse(status, "only HTTP/1.0 and HTTP/1.1 are served\n");
    req.remote_addr = remote_ip;
    req.remote_port = remote_port;
    req.local_addr = local_ip;
    req.local_port = local_port;
    const std::string connection_header = req.get_header_value("Connection");
    const bool close = served + 1 == limits_.max_requests_per_connection || ListsToken(connection_header, "close") ||
                       (req.version == "HTTP/1.0" && !ListsToken(connection_header, "keep-alive"));

    // Bodies that cannot be bounded before they are read are refused unread.
    long long length = ContentLength(req, &status);
    if (status != 0) return refuse(400, "malformed Content-Length\n");
    if (req.has_header("Transfer-Encoding"))
      return refuse(411, "a body needs a Content-Length (Transfer-Encoding is not accepted)\n");
    if (ExpectsBody(req.method) && length < 0) return refuse(411, "a body needs a Content-Length\n");
    std::string encoding = req.get_header_value("Content-Encoding");
    if (!encoding.empty() && !EqualsIgnoreCase(encoding, "identity"))
      return refuse(415, "compressed bodies are not accepted\n");
    const bool expects_continue =
        req.version == "HTTP/1.1" && ListsToken(req.get_header_value("Expect"), "100-continue");
    std::size_t body_bytes = length > 0 ? static_cast<std::size_t>(length) : 0;
    if (body_bytes > limits_.max_body_bytes) {
      // Answered at once; the body is then read and thrown away (unless the client waits for a
      // 100 Continue), so that closing does not reset the connection under the answer.
      refuse(413, "the body is over " + std::to_string(limits_.max_body_bytes) + " bytes\n");
      if (!expects_continue) reader.ReadBody(body_bytes, deadline, nullptr, false);
      return;
    }
    std::size_t reserved = 0;
    if (ExpectsBody(req.method) && limits_.max_body_bytes_in_flight > 0) {
      if (!ReserveBody(body_bytes)) return refuse(503, "too many requests at once; try again\n");
      reserved = body_bytes;
    }
    if (expects_continue && body_bytes > 0) {
      constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      if (!connection.Write(kContinue.data(), kContinue.size(), Clock::now() + limits_.write_timeout)) {
        if (reserved > 0) ReleaseBody(reserved);
        return;
      }
    }
    if (body_bytes > 0 && !reader.ReadBody(body_bytes, deadline, &req.body, true)) {
      if (reserved > 0) ReleaseBody(reserved);
      if (reader.timed_out() && !stopping_) ++cut_;
      return;
    }

    httplib::Response res;
    bool path_known = false;
    const HttpRoutes::Handler* handler = routes_.Find(req.method, req.path, &path_known);
    if (handler == nullptr) {
      res.status = path_known ? 405 : 404;
      if (path_known) res.set_header("Allow", routes_.Allowed(req.path));
    } else {
      try {
        (*handler)(req, res);
        if (res.status == -1) res.status = 200;
      } catch (const std::exception&) {
        res = httplib::Response();
        res.status = 500;
      }
    }
    if (reserved > 0) ReleaseBody(reserved);
    const bool head_only = req.method == "HEAD";
    req = httplib::Request();  // the body goes before the answer is written
    if (!write(res, head_only, close || stopping_, limits_.max_requests_per_connection - served - 1) || close) return;
  }
}

}  // namespace tfjob::controller
