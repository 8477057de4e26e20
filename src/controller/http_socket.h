#pragma once
// The sockets of HttpServerBase (controller/http_server_base.h): a TCP connection, plain or TLS,
// whose every wait has a deadline, and the listening socket's set-up. Internal to controller/.

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <string>

#include "common/status.h"
#include "controller/http_server_base.h"

namespace tfjob::controller {

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

// Splits "host:port" ("[host]:port" for IPv6; no host: all interfaces) for getaddrinfo.
Status SplitAddress(const std::string& address, std::string* host, std::string* port);
// A non-blocking socket bound to and listening on the first of `addresses` that takes it, or -1
// (*error tells why the last one failed).
int ListenOnFirst(const addrinfo* addresses, int backlog, std::string* error);
// The port a socket is bound to.
int LocalPort(int fd);

}  // namespace tfjob::controller
