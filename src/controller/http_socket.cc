#include "controller/http_socket.h"

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace tfjob::controller {

Status SplitAddress(const std::string& address, std::string* host, std::string* port) {
  auto colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgumentError("address \"" + address + "\" is not host:port");
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') *host = host->substr(1, host->size() - 2);
  if (host->empty()) *host = "0.0.0.0";
  if (port->empty() || port->size() > 5 ||
      !std::all_of(port->begin(), port->end(), [](char c) { return c >= '0' && c <= '9'; }) || std::stoi(*port) > 65535)
    return InvalidArgumentError("address \"" + address + "\" has no valid port");
  return OkStatus();
}

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

int LocalPort(int fd) {
  sockaddr_storage bound{};
  socklen_t len = sizeof bound;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

}  // namespace tfjob::controller
