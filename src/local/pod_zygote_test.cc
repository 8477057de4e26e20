#include "local/pod_zygote.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::local {
namespace {

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

// Field `index` (1-based, as in proc(5)) of /proc/<pid>/stat; "" when the process is gone.
std::string StatField(pid_t pid, int index) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t close_paren = text.rfind(')');
  if (close_paren == std::string::npos) return "";
  std::istringstream rest(text.substr(close_paren + 2));
  std::string field;
  for (int i = 3; i <= index && rest >> field; ++i) {
  }
  return field;
}

bool Gone(pid_t pid) {
  std::string state = StatField(pid, 3);
  return state.empty() || state == "Z";
}

SupervisorSpec ShSpec(const std::string& script, int out_fd) {
  SupervisorSpec spec;
  spec.uid = "w-1";
  spec.parent = getpid();
  spec.containers = {{"tensorflow", {"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, "", out_fd}};
  return spec;
}

TEST(PodZygote, TheSupervisorIsTheCallersChildInAGroupOfItsOwn) {
  StatusOr<std::unique_ptr<PodZygote>> zygote = PodZygote::Start();
  ASSERT_TRUE(zygote.ok()) << zygote.status().message();
  int out[2];
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  StatusOr<pid_t> pid = (*zygote)->Spawn(ShSpec("echo $$; exec sleep 100", out[1]));
  ASSERT_TRUE(pid.ok()) << pid.status().message();
  close(out[1]);
  EXPECT_NE(*pid, (*zygote)->pid());
  EXPECT_EQ(StatField(*pid, 4), std::to_string(getpid()));  // ppid: the caller, not the zygote
  EXPECT_EQ(StatField(*pid, 5), std::to_string(*pid));      // pgrp
  char line[32] = {};
  ASSERT_GT(read(out[0], line, sizeof line - 1), 0);
  pid_t sh = static_cast<pid_t>(std::stol(line));
  EXPECT_EQ(StatField(sh, 4), std::to_string(*pid));  // the container is the supervisor's child
  kill(*pid, SIGTERM);
  int status = 0;
  ASSERT_EQ(waitpid(*pid, &status, 0), *pid);
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGTERM);  // the container, stopped with SIGTERM
  EXPECT_EQ(ReadAll(out[0]), "");                 // EOF: neither the zygote nor the pod holds the pipe any more
  close(out[0]);
  pid_t zygote_pid = (*zygote)->pid();
  zygote->reset();  // closes the socket: the zygote ends, and is waited for
  EXPECT_TRUE(Gone(zygote_pid));
}

TEST(PodZygote, AZygoteKilledFromOutsideIsUnavailableSoTheCallerCanForkInstead) {
  StatusOr<std::unique_ptr<PodZygote>> zygote = PodZygote::Start();
  ASSERT_TRUE(zygote.ok()) << zygote.status().message();
  ASSERT_EQ(kill((*zygote)->pid(), SIGKILL), 0);
  ASSERT_EQ(waitpid((*zygote)->pid(), nullptr, 0), (*zygote)->pid());
  (*zygote)->Reaped();
  StatusOr<pid_t> pid = (*zygote)->Spawn(ShSpec("exit 0", -1));
  EXPECT_EQ(pid.status().code(), StatusCode::kUnavailable) << pid.status().message();
  EXPECT_EQ((*zygote)->Spawn(ShSpec("exit 0", -1)).status().code(), StatusCode::kUnavailable);
}

// The runner (here a child of the test) is SIGKILLed while its pod runs: the pod, forked by the
// zygote, dies with it all the same, and so does the zygote.
TEST(PodZygote, ThePodAndTheZygoteDieWithTheRunner) {
  int ids[2], out[2];
  ASSERT_EQ(pipe(ids), 0);
  ASSERT_EQ(pipe2(out, O_CLOEXEC), 0);
  pid_t runner = fork();
  if (runner == 0) {
    close(ids[0]);
    close(out[0]);
    StatusOr<std::unique_ptr<PodZygote>> zygote = PodZygote::Start();
    if (!zygote.ok()) _exit(1);
    StatusOr<pid_t> pid = (*zygote)->Spawn(ShSpec("sleep 1000 & echo $!; wait", out[1]));
    if (!pid.ok()) _exit(2);
    std::string line = std::to_string((*zygote)->pid()) + " " + std::to_string(*pid) + "\n";
    if (write(ids[1], line.data(), line.size()) < 0) _exit(3);
    pause();
    _exit(4);
  }
  close(ids[1]);
  close(out[1]);
  pid_t zygote = 0, supervisor = 0, sleeper = 0;
  {
    char buf[64] = {};
    ASSERT_GT(read(ids[0], buf, sizeof buf - 1), 0);
    std::istringstream(buf) >> zygote >> supervisor;
    char line[32] = {};
    ASSERT_GT(read(out[0], line, sizeof line - 1), 0);
    sleeper = static_cast<pid_t>(std::stol(line));
  }
  ASSERT_GT(zygote, 0);
  ASSERT_GT(supervisor, 0);
  EXPECT_FALSE(Gone(sleeper));
  ASSERT_EQ(kill(runner, SIGKILL), 0);
  ASSERT_EQ(waitpid(runner, nullptr, 0), runner);
  bool all_gone = false;
  for (int i = 0; i < 500 && !all_gone; ++i) {
    all_gone = Gone(zygote) && Gone(supervisor) && Gone(sleeper);
    if (!all_gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(Gone(zygote));
  EXPECT_TRUE(Gone(supervisor));
  EXPECT_TRUE(Gone(sleeper));
  close(ids[0]);
  close(out[0]);
}

}  // namespace
}  // namespace tfjob::local
