#include "local/supervisor_wire.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>

namespace tfjob::local {
namespace {

constexpr char kMagic[4] = {'T', 'F', 'Z', 'S'};
constexpr uint32_t kVersion = 1;

class Writer {
 public:
  explicit Writer(std::vector<int>* fds) : fds_(fds) {}
  void U32(uint32_t v) { Fixed(v, 4); }
  void U64(uint64_t v) { Fixed(v, 8); }
  void I32(int32_t v) { U32(static_cast<uint32_t>(v)); }
  void I64(int64_t v) { U64(static_cast<uint64_t>(v)); }
  void Str(std::string_view s) {
    U32(static_cast<uint32_t>(s.size()));
    out_.append(s);
  }
  void Strs(const std::vector<std::string>& list) {
    U32(static_cast<uint32_t>(list.size()));
    for (const auto& s : list) Str(s);
  }
  // A descriptor as its index in fds_ (added once).
  void Fd(int fd) {
    if (fd < 0) return I32(-1);
    auto it = std::find(fds_->begin(), fds_->end(), fd);
    if (it == fds_->end()) it = fds_->insert(fds_->end(), fd);
    I32(static_cast<int32_t>(it - fds_->begin()));
  }
  void Raw(std::string_view s) { out_.append(s); }
  std::string Take() { return std::move(out_); }

 private:
  void Fixed(uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) out_.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
  }
  std::string out_;
  std::vector<int>* fds_;
};

class Reader {
 public:
  Reader(std::string_view in, const std::vector<int>& fds) : in_(in), fds_(fds) {}
  bool ok() const { return error_.empty(); }
  const std::string& error() const { return error_; }
  size_t left() const { return in_.size() - at_; }
  size_t at() const { return at_; }

  uint32_t U32() { return static_cast<uint32_t>(Fixed(4)); }
  uint64_t U64() { return Fixed(8); }
  int32_t I32() { return static_cast<int32_t>(U32()); }
  int64_t I64() { return static_cast<int64_t>(U64()); }
  std::string Str(const char* what) {
    uint32_t n = U32();
    if (!ok()) return {};
    if (n > left()) {
      Fail(std::string(what) + ": length " + std::to_string(n) + " past the end (" + std::to_string(left()) +
           " bytes left)");
      return {};
    }
    std::string s(in_.substr(at_, n));
    at_ += n;
    return s;
  }
  // A list count, checked against what is left (each item takes at least `min_item` bytes), so a
  // hostile count allocates nothing.
  uint32_t Count(const char* what, size_t min_item) {
    uint32_t n = U32();
    if (ok() && n > left() / min_item) {
      Fail(std::string(what) + ": count " + std::to_string(n) + " past the end (" + std::to_string(left()) +
           " bytes left)");
      return 0;
    }
    return n;
  }
  std::vector<std::string> Strs(const char* what) {
    std::vector<std::string> out;
    uint32_t n = Count(what, 4);
    out.reserve(n);
    for (uint32_t i = 0; i < n && ok(); ++i) out.push_back(Str(what));
    return out;
  }
  int Fd(const char* what) {
    int32_t i = I32();
    if (!ok() || i == -1) return -1;
    if (i < 0 || static_cast<size_t>(i) >= fds_.size()) {
      Fail(std::string(what) + ": descriptor index " + std::to_string(i) + " but " + std::to_string(fds_.size()) +
           " descriptors came");
      return -1;
    }
    return fds_[static_cast<size_t>(i)];
  }
  bool Magic() {
    if (left() < sizeof kMagic || std::memcmp(in_.data(), kMagic, sizeof kMagic) != 0) {
      Fail("not a supervisor spec (no \"TFZS\" at the start)");
      return false;
    }
    at_ += sizeof kMagic;
    return true;
  }
  void Fail(std::string why) {
    if (error_.empty()) error_ = std::move(why);
  }

 private:
  uint64_t Fixed(int bytes) {
    if (!ok()) return 0;
    if (left() < static_cast<size_t>(bytes)) {
      Fail("truncated at byte " + std::to_string(in_.size()));
      return 0;
    }
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in_[at_ + i])) << (8 * i);
    at_ += static_cast<size_t>(bytes);
    return v;
  }
  std::string_view in_;
  const std::vector<int>& fds_;
  size_t at_ = 0;
  std::string error_;
};

void EncodeContainers(Writer& w, const std::vector<SupervisedContainer>& list) {
  w.U32(static_cast<uint32_t>(list.size()));
  for (const auto& c : list) {
    w.Str(c.name);
    w.Strs(c.argv);
    w.Strs(c.env);
    w.Str(c.working_dir);
    w.Fd(c.out_fd);
  }
}

// The smallest container: name, argv, env, working_dir (4 bytes each when empty), out (4).
constexpr size_t kMinContainer = 20;

std::vector<SupervisedContainer> DecodeContainers(Reader& r, const char* what) {
  std::vector<SupervisedContainer> out;
  uint32_t n = r.Count(what, kMinContainer);
  out.reserve(n);
  for (uint32_t i = 0; i < n && r.ok(); ++i) {
    SupervisedContainer c;
    c.name = r.Str("container name");
    c.argv = r.Strs("argv");
    c.env = r.Strs("env");
    c.working_dir = r.Str("working dir");
    c.out_fd = r.Fd("container output");
    if (r.ok() && c.argv.empty()) r.Fail("container \"" + c.name + "\" has no command");
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace

EncodedSpec EncodeSupervisorSpec(const SupervisorSpec& spec) {
  EncodedSpec e;
  Writer w(&e.fds);
  w.Raw(std::string_view(kMagic, sizeof kMagic));
  w.U32(kVersion);
  w.I64(spec.parent);
  w.Fd(spec.status_fd);
  w.Fd(spec.port_fd);
  w.Fd(spec.start_barrier_fd);
  w.I64(spec.grace_period.count());
  w.U64(spec.nofile_soft);
  w.U64(spec.main);
  w.Str(spec.uid);
  EncodeContainers(w, spec.init_containers);
  EncodeContainers(w, spec.containers);
  e.bytes = w.Take();
  return e;
}

StatusOr<SupervisorSpec> DecodeSupervisorSpec(std::string_view bytes, const std::vector<int>& fds) {
  Reader r(bytes, fds);
  SupervisorSpec spec;
  if (r.Magic()) {
    if (uint32_t v = r.U32(); r.ok() && v != kVersion) r.Fail("version " + std::to_string(v) + ", want 1");
    spec.parent = r.I64();
    spec.status_fd = r.Fd("status");
    spec.port_fd = r.Fd("port");
    spec.start_barrier_fd = r.Fd("start barrier");
    spec.grace_period = std::chrono::milliseconds(r.I64());
    if (r.ok() && spec.grace_period.count() < 0) r.Fail("negative grace period");
    spec.nofile_soft = r.U64();
    uint64_t main = r.U64();
    spec.uid = r.Str("uid");
    spec.init_containers = DecodeContainers(r, "init containers");
    spec.containers = DecodeContainers(r, "containers");
    if (r.ok() && r.left() > 0) r.Fail(std::to_string(r.left()) + " bytes after the spec");
    if (r.ok() && spec.containers.empty()) r.Fail("no container");
    if (r.ok() && main >= spec.containers.size())
      r.Fail("main container " + std::to_string(main) + " of " + std::to_string(spec.containers.size()));
    spec.main = static_cast<size_t>(main);
  }
  if (!r.ok()) return InvalidArgumentError("supervisor spec: " + r.error());
  return spec;
}

namespace {

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

Status Errno(const char* what) {
  return UnavailableError(std::string(what) + ": " + std::strerror(errno));
}

void CloseAll(std::vector<int>* fds) {
  for (int fd : *fds) close(fd);
  fds->clear();
}

// Reads exactly `n` bytes into `p`; 0 when done, else the bytes read before EOF or -1 (errno).
ssize_t ReadFully(int sock, char* p, size_t n, size_t* got) {
  while (*got < n) {
    ssize_t r = recv(sock, p + *got, n - *got, MSG_CMSG_CLOEXEC);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return r;
    *got += static_cast<size_t>(r);
  }
  return 1;
}

// The descriptors that came with `msg` (SCM_RIGHTS).
std::vector<int> ReceivedFds(msghdr* msg) {
  std::vector<int> fds;
  for (cmsghdr* c = CMSG_FIRSTHDR(msg); c != nullptr; c = CMSG_NXTHDR(msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (size_t i = 0; i < count; ++i) {
      int fd;
      std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
      fds.push_back(fd);
    }
  }
  return fds;
}

Status CheckHeader(const msghdr& msg, uint32_t length, uint32_t count, size_t fds) {
  if ((msg.msg_flags & MSG_CTRUNC) != 0) return InvalidArgumentError("supervisor spec: descriptors cut off");
  if (length > kMaxSpecMessageBytes)
    return InvalidArgumentError("supervisor spec: length " + std::to_string(length) + " over the limit of " +
                                std::to_string(kMaxSpecMessageBytes));
  if (count != fds)
    return InvalidArgumentError("supervisor spec: " + std::to_string(count) + " descriptors announced, " +
                                std::to_string(fds) + " came");
  return OkStatus();
}

}  // namespace

Status SendSpecMessage(int sock, std::string_view body, const std::vector<int>& fds) {
  if (body.size() > kMaxSpecMessageBytes || fds.size() > kMaxSpecMessageFds)
    return InvalidArgumentError("supervisor spec: " + std::to_string(body.size()) + " bytes and " +
                                std::to_string(fds.size()) + " descriptors, over the limit");
  char header[8];
  PutU32(header, static_cast<uint32_t>(body.size()));
  PutU32(header + 4, static_cast<uint32_t>(fds.size()));
  iovec iov{header, sizeof header};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  std::vector<char> control(CMSG_SPACE(sizeof(int) * std::max<size_t>(fds.size(), 1)));
  if (!fds.empty()) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * fds.size());
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * fds.size());
  }
  ssize_t n;
  do n = sendmsg(sock, &msg, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Errno("sendmsg");
  // The rest of the header (a stream socket may take part of it), then the body.
  std::string_view rest(header + n, sizeof header - static_cast<size_t>(n));
  for (std::string_view part : {rest, body}) {
    while (!part.empty()) {
      ssize_t w = send(sock, part.data(), part.size(), MSG_NOSIGNAL);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Errno("send");
      part.remove_prefix(static_cast<size_t>(w));
    }
  }
  return OkStatus();
}

StatusOr<SpecMessage> ReceiveSpecMessage(int sock) {
  SpecMessage m;
  char header[8];
  iovec iov{header, sizeof header};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * 253)];
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n < 0) return Errno("recvmsg");
  if (n == 0) return NotFoundError("end of the stream");
  m.fds = ReceivedFds(&msg);
  size_t got = static_cast<size_t>(n);
  if (ssize_t r = ReadFully(sock, header, sizeof header, &got); r <= 0) {
    Status s = r < 0 ? Errno("recv") : DataLossError("supervisor spec: the stream ended inside a header");
    CloseAll(&m.fds);
    return s;
  }
  const uint32_t length = GetU32(header);
  if (Status bad = CheckHeader(msg, length, GetU32(header + 4), m.fds.size()); !bad.ok()) {
    CloseAll(&m.fds);
    return bad;
  }
  m.body.resize(length);
  got = 0;
  if (ssize_t r = ReadFully(sock, m.body.data(), length, &got); r <= 0) {
    Status s = r < 0 ? Errno("recv") : DataLossError("supervisor spec: the stream ended inside a body");
    CloseAll(&m.fds);
    return s;
  }
  return m;
}

}  // namespace tfjob::local
