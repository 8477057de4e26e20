#include "local/port_reservations.h"

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <random>
#include <set>
#include <vector>

namespace tfjob::local {
namespace {

// A socket bound to 127.0.0.1:`port` (0: a free one), not listening. -1 when it cannot be had.
int BindLoopback(int port, bool reuse) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  if (reuse) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    int saved = errno;
    close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

// Free ports from below the kernel's ephemeral range (net.ipv4.ip_local_port_range), from a
// random start; the kernel's choice when the range is too small for the job.
class ReplicaPorts {
 public:
  explicit ReplicaPorts(size_t needed) {
    int ephemeral_low = 32768;
    std::ifstream range("/proc/sys/net/ipv4/ip_local_port_range");
    int low = 0, high = 0;
    if (range >> low >> high && low > 0) ephemeral_low = low;
    low_ = 10000;
    high_ = ephemeral_low - 1;
    if (high_ - low_ + 1 < static_cast<int>(needed) * 4) {
      low_ = high_ = 0;  // too few: let the kernel choose
      return;
    }
    next_ = low_ + static_cast<int>(std::random_device{}() % static_cast<unsigned>(high_ - low_ + 1));
  }
  // A socket bound to a free port of the range; -1 when there is none.
  int Bind() {
    if (low_ == 0) return BindLoopback(0, false);
    for (int tries = high_ - low_ + 1; tries > 0; --tries) {
      int port = next_;
      next_ = next_ == high_ ? low_ : next_ + 1;
      if (int fd = BindLoopback(port, false); fd >= 0) return fd;
    }
    return -1;
  }

 private:
  int low_ = 0, high_ = 0, next_ = 0;
};

int PortOf(int fd) {
  sockaddr_in addr{};
  socklen_t len = sizeof addr;
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) return 0;
  return ntohs(addr.sin_port);
}

}  // namespace

PortReservations::~PortReservations() {
  for (auto& [n, fd] : reserved_)
    if (fd >= 0) close(fd);
}

Status PortReservations::ReserveAll(const std::vector<std::string>& names) {
  std::set<int> seen;
  ReplicaPorts free_ports(names.size());
  for (const auto& name : names) {
    int fd = free_ports.Bind();
    if (fd < 0) return InvalidArgumentError("reserving a port on 127.0.0.1 for " + name + ": " + std::strerror(errno));
    int port = PortOf(fd);
    TFJOB_CHECK(seen.insert(port).second);  // a bound port is not handed out twice
    reserved_[name] = fd;
    port_of_[name] = port;
  }
  return OkStatus();
}

int PortReservations::port(const std::string& name) const {
  auto it = port_of_.find(name);
  return it == port_of_.end() ? 0 : it->second;
}

int PortReservations::fd(const std::string& name) const {
  auto it = reserved_.find(name);
  return it == reserved_.end() ? -1 : it->second;
}

void PortReservations::CloseOwnCopy(const std::string& name) {
  if (auto it = reserved_.find(name); it != reserved_.end() && it->second >= 0) {
    close(it->second);
    it->second = -1;
  }
}

void PortReservations::Released(const std::string& name) {
  if (auto it = reserved_.find(name); it != reserved_.end()) {
    if (it->second >= 0) close(it->second);
    reserved_.erase(it);
  }
}

void PortReservations::ReserveAgain(const std::string& name) {
  if (reserved_.contains(name)) return;
  int fd = BindLoopback(port(name), false);
  if (fd < 0) fd = BindLoopback(port(name), true);
  if (fd >= 0) reserved_[name] = fd;
}

}  // namespace tfjob::local
