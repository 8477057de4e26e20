#include "local/supervisor_wire.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::local {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

SupervisorSpec FullSpec() {
  SupervisorSpec spec;
  spec.uid = "worker-0-3";
  spec.parent = 4242;
  spec.status_fd = 7;
  spec.port_fd = 9;
  spec.start_barrier_fd = -1;
  spec.grace_period = std::chrono::milliseconds(1500);
  spec.nofile_soft = 65536;
  spec.init_containers = {{"setup", {"/bin/sh", "-c", "echo 'a\tb'"}, {"PATH=/bin", "X="}, "/tmp", 11}};
  spec.containers = {{"tensorflow", {"python", ""}, {}, "", 12}, {"sidecar", {"sleep", "1"}, {"A=1"}, "", 12}};
  spec.main = 1;
  return spec;
}

bool SameSpec(const SupervisorSpec& a, const SupervisorSpec& b) {
  auto same = [](const std::vector<SupervisedContainer>& x, const std::vector<SupervisedContainer>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i)
      if (x[i].name != y[i].name || x[i].argv != y[i].argv || x[i].env != y[i].env ||
          x[i].working_dir != y[i].working_dir || x[i].out_fd != y[i].out_fd)
        return false;
    return true;
  };
  return a.uid == b.uid && a.parent == b.parent && a.status_fd == b.status_fd && a.port_fd == b.port_fd &&
         a.start_barrier_fd == b.start_barrier_fd && a.grace_period == b.grace_period &&
         a.nofile_soft == b.nofile_soft && a.main == b.main && same(a.init_containers, b.init_containers) &&
         same(a.containers, b.containers);
}

TEST(SupervisorWire, RoundTripsWithEachDescriptorSentOnce) {
  SupervisorSpec spec = FullSpec();
  EncodedSpec e = EncodeSupervisorSpec(spec);
  EXPECT_THAT(e.fds, ElementsAre(7, 9, 11, 12));  // 12 twice in the spec, once on the wire
  // The receiver's descriptors have other numbers: the spec names those.
  StatusOr<SupervisorSpec> back = DecodeSupervisorSpec(e.bytes, {70, 90, 110, 120});
  ASSERT_TRUE(back.ok()) << back.status().message();
  SupervisorSpec want = spec;
  want.status_fd = 70;
  want.port_fd = 90;
  want.init_containers[0].out_fd = 110;
  want.containers[0].out_fd = want.containers[1].out_fd = 120;
  EXPECT_TRUE(SameSpec(*back, want));
}

TEST(SupervisorWire, EveryCutOfAValidSpecIsAnErrorNeverACrash) {
  EncodedSpec e = EncodeSupervisorSpec(FullSpec());
  for (size_t n = 0; n < e.bytes.size(); ++n) {
    StatusOr<SupervisorSpec> s = DecodeSupervisorSpec(std::string_view(e.bytes).substr(0, n), e.fds);
    ASSERT_FALSE(s.ok()) << "cut at " << n;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument);
    EXPECT_THAT(s.status().message(), HasSubstr("supervisor spec: "));
  }
}

// Overwrites the 4 bytes at `at` with `v` (little-endian).
std::string With(std::string bytes, size_t at, uint32_t v) {
  for (int i = 0; i < 4; ++i) bytes[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
  return bytes;
}

TEST(SupervisorWire, HostileBytesAreClearErrors) {
  SupervisorSpec one;
  one.uid = "u";
  one.containers = {{"c", {"true"}, {}, "", -1}};
  const std::string good = EncodeSupervisorSpec(one).bytes;
  ASSERT_TRUE(DecodeSupervisorSpec(good, {}).ok());
  // Offsets in `good`: magic 0, version 4, parent 8, fds 16/20/24, grace 28, nofile 36, main 44,
  // uid 52 (length) + "u", init count 57, containers count 61, name length 65.
  struct Case {
    const char* name;
    std::string bytes;
    std::vector<int> fds;
    const char* want;
  } cases[] = {
      {"empty", "", {}, "no \"TFZS\""},
      {"another magic", "JSON" + good.substr(4), {}, "no \"TFZS\""},
      {"another version", With(good, 4, 2), {}, "version 2"},
      {"a uid length past the end", With(good, 52, 0xffffffffu), {}, "uid: length 4294967295 past the end"},
      {"a container count past the end", With(good, 61, 0x7fffffffu), {}, "containers: count 2147483647"},
      {"an init container count past the end", With(good, 57, 1000000), {}, "init containers: count 1000000"},
      {"a descriptor index past what came", With(good, 16, 3), {5}, "status: descriptor index 3 but 1"},
      {"a negative descriptor index", With(good, 20, 0xfffffffeu), {5}, "port: descriptor index -2"},
      {"bytes after the spec", good + "x", {}, "1 bytes after the spec"},
      {"no container", With(good, 61, 0).substr(0, 65), {}, "no container"},
      {"main past the containers", With(good, 44, 1), {}, "main container 1 of 1"},
      {"a negative grace period", With(With(good, 28, 0xffffffffu), 32, 0xffffffffu), {}, "negative grace period"},
  };
  for (const auto& c : cases) {
    StatusOr<SupervisorSpec> s = DecodeSupervisorSpec(c.bytes, c.fds);
    ASSERT_FALSE(s.ok()) << c.name;
    EXPECT_EQ(s.status().code(), StatusCode::kInvalidArgument) << c.name;
    EXPECT_THAT(s.status().message(), HasSubstr(c.want)) << c.name;
  }
  SupervisorSpec no_command = one;
  no_command.containers[0].argv.clear();
  StatusOr<SupervisorSpec> s = DecodeSupervisorSpec(EncodeSupervisorSpec(no_command).bytes, {});
  ASSERT_FALSE(s.ok());
  EXPECT_THAT(s.status().message(), HasSubstr("container \"c\" has no command"));
}

int OpenFds() {
  int n = 0;
  for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
    (void)e;
    ++n;
  }
  return n;
}

struct SocketPair {
  int fd[2];
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
  ~SocketPair() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void CloseSender() {
    close(fd[0]);
    fd[0] = -1;
  }
};

TEST(SupervisorWire, AMessageCarriesItsDescriptors) {
  SocketPair s;
  int p[2];
  ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
  ASSERT_TRUE(SendSpecMessage(s.fd[0], "body", {p[1]}).ok());
  // More than the socket's buffer: sent while the other side reads.
  std::jthread big_sender([&] { EXPECT_TRUE(SendSpecMessage(s.fd[0], std::string(3000000, 'z'), {}).ok()); });
  StatusOr<SpecMessage> m = ReceiveSpecMessage(s.fd[1]);
  ASSERT_TRUE(m.ok()) << m.status().message();
  EXPECT_EQ(m->body, "body");
  ASSERT_EQ(m->fds.size(), 1u);
  close(p[1]);
  ASSERT_EQ(write(m->fds[0], "x", 1), 1);  // the same pipe, through the received copy
  close(m->fds[0]);
  char c = 0;
  EXPECT_EQ(read(p[0], &c, 1), 1);
  EXPECT_EQ(c, 'x');
  EXPECT_EQ(read(p[0], &c, 1), 0);  // every copy closed
  close(p[0]);
  StatusOr<SpecMessage> big = ReceiveSpecMessage(s.fd[1]);
  big_sender.join();
  ASSERT_TRUE(big.ok()) << big.status().message();
  EXPECT_EQ(big->body, std::string(3000000, 'z'));
  s.CloseSender();
  StatusOr<SpecMessage> end = ReceiveSpecMessage(s.fd[1]);
  EXPECT_EQ(end.status().code(), StatusCode::kNotFound);
}

TEST(SupervisorWire, BrokenMessagesAreErrorsThatLeaveNoDescriptorOpen) {
  auto header = [](uint32_t length, uint32_t count) {
    std::string h(8, '\0');
    for (int i = 0; i < 4; ++i) {
      h[i] = static_cast<char>((length >> (8 * i)) & 0xff);
      h[4 + i] = static_cast<char>((count >> (8 * i)) & 0xff);
    }
    return h;
  };
  struct Case {
    const char* name;
    std::string raw;  // written as is after the descriptors' message
    bool with_fd;     // a descriptor comes with the first byte
    StatusCode code;
    const char* want;
  } cases[] = {
      {"an oversized length", header(0xffffffffu, 1), true, StatusCode::kInvalidArgument, "over the limit"},
      {"more descriptors announced than came", header(0, 5), true, StatusCode::kInvalidArgument,
       "5 descriptors announced, 1 came"},
      {"the stream ends inside the header", header(4, 0).substr(0, 5), false, StatusCode::kDataLoss, "inside a header"},
      {"the stream ends inside the body", header(10, 1) + "abc", true, StatusCode::kDataLoss, "inside a body"},
  };
  const int before = OpenFds();
  for (const auto& c : cases) {
    SocketPair s;
    int p[2];
    ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
    iovec iov{const_cast<char*>(c.raw.data()), 1};
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (c.with_fd) {
      msg.msg_control = control;
      msg.msg_controllen = sizeof control;
      cmsghdr* h = CMSG_FIRSTHDR(&msg);
      h->cmsg_level = SOL_SOCKET;
      h->cmsg_type = SCM_RIGHTS;
      h->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(h), &p[1], sizeof(int));
    }
    ASSERT_EQ(sendmsg(s.fd[0], &msg, 0), 1) << c.name;
    ASSERT_EQ(write(s.fd[0], c.raw.data() + 1, c.raw.size() - 1), static_cast<ssize_t>(c.raw.size() - 1));
    s.CloseSender();
    close(p[1]);
    StatusOr<SpecMessage> m = ReceiveSpecMessage(s.fd[1]);
    ASSERT_FALSE(m.ok()) << c.name;
    EXPECT_EQ(m.status().code(), c.code) << c.name;
    EXPECT_THAT(m.status().message(), HasSubstr(c.want)) << c.name;
    char ch;
    EXPECT_EQ(read(p[0], &ch, 1), 0) << c.name << ": the received copy of the pipe was left open";
    close(p[0]);
  }
  EXPECT_EQ(OpenFds(), before);
}

TEST(SupervisorWire, OverTheLimitsIsRefusedBeforeSending) {
  SocketPair s;
  std::vector<int> fds(kMaxSpecMessageFds + 1, 0);
  EXPECT_EQ(SendSpecMessage(s.fd[0], "x", fds).code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace tfjob::local
