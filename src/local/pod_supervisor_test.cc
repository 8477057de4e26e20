#include "local/pod_supervisor.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "local/pod_zygote.h"
#include "local/process_tree.h"

namespace tfjob::local {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string ReadAll(int fd) {
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  return out;
}

struct Ran {
  int exit_code;
  std::string output;  // every container's, in one pipe
  std::string status;  // the status lines
};

// How the supervisor is forked: by the test process itself, or by a pod zygote it starts (the
// supervisor is the test's child either way).
enum class Via { kFork, kZygote };

// Runs a supervisor in a child of the test, as `tfjob run` does, and waits for it.
Ran Supervise(SupervisorSpec spec, Via via) {
  int out[2], status[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(status, O_CLOEXEC), 0);
  spec.parent = getpid();
  spec.status_fd = status[1];
  for (auto& c : spec.init_containers) c.out_fd = out[1];
  for (auto& c : spec.containers) c.out_fd = out[1];
  std::unique_ptr<PodZygote> zygote;
  if (via == Via::kZygote) {
    StatusOr<std::unique_ptr<PodZygote>> z = PodZygote::Start();
    EXPECT_TRUE(z.ok()) << z.status().message();
    if (z.ok()) zygote = std::move(*z);
  }
  StatusOr<pid_t> pid = zygote ? zygote->Spawn(spec) : ForkPodSupervisor(spec);
  EXPECT_TRUE(pid.ok()) << pid.status().message();
  zygote.reset();  // the zygote has closed its copies and may go: the pod must not need it
  close(out[1]);
  close(status[1]);
  Ran r;
  r.output = ReadAll(out[0]);  // EOF: nothing of the pod is left holding it
  r.status = ReadAll(status[0]);
  close(out[0]);
  close(status[0]);
  int st = 0;
  waitpid(*pid, &st, 0);
  r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  return r;
}

// The status lines but each container's "start" line (its pid differs at each run).
std::string WithoutStarts(const std::string& status) {
  std::string out;
  size_t at = 0;
  while (at < status.size()) {
    size_t nl = status.find('\n', at);
    std::string line = status.substr(at, nl == std::string::npos ? std::string::npos : nl + 1 - at);
    if (line.find("\tstart\t") == std::string::npos) out += line;
    at = nl == std::string::npos ? status.size() : nl + 1;
  }
  return out;
}

class PodSupervisor : public ::testing::TestWithParam<Via> {
 protected:
  Ran Supervise(SupervisorSpec spec) { return ::tfjob::local::Supervise(std::move(spec), GetParam()); }
};
INSTANTIATE_TEST_SUITE_P(ForkedAndThroughTheZygote, PodSupervisor, ::testing::Values(Via::kFork, Via::kZygote),
                         [](const ::testing::TestParamInfo<Via>& p) {
                           return p.param == Via::kFork ? "Fork" : "Zygote";
                         });

SupervisedContainer Sh(const std::string& name, const std::string& script, std::string dir = "") {
  return {name, {"/bin/sh", "-c", script}, {"PATH=/usr/bin:/bin"}, std::move(dir), -1};
}

TEST_P(PodSupervisor, AMissingWorkingDirectoryIsReportedWithTheContainerAndTheDirectory) {
  SupervisorSpec spec;
  spec.uid = "w-1";
  spec.containers = {Sh("tensorflow", "echo never", "/no/such/dir")};
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_EQ(r.output, "");
  EXPECT_EQ(r.status,
            "w-1\terror\ttensorflow\tworking directory \"/no/such/dir\" cannot be used: No such file or directory\n");
}

TEST_P(PodSupervisor, ACommandThatCannotBeExecutedIsReported) {
  SupervisorSpec spec;
  spec.uid = "w-1";
  spec.containers = {{"tensorflow", {"/"}, {}, "", -1}};
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 126);
  EXPECT_EQ(r.status, "w-1\terror\ttensorflow\tcannot execute \"/\": Permission denied\n");
}

TEST_P(PodSupervisor, InitContainersRunInOrderBeforeTheContainersAndTheMainExitCodeIsTheReplicas) {
  SupervisorSpec spec;
  spec.uid = "u";
  spec.init_containers = {Sh("one", "echo init-1"), Sh("two", "echo init-2")};
  spec.containers = {Sh("sidecar", "sleep 0.3; echo sidecar"), Sh("tensorflow", "sleep 0.6; echo main; exit 3")};
  spec.main = 1;
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 3);
  EXPECT_EQ(r.output, "init-1\ninit-2\nsidecar\nmain\n");
  EXPECT_EQ(WithoutStarts(r.status), "u\texit\tone\t0\nu\texit\ttwo\t0\nu\texit\tsidecar\t0\n");
}

// Issue 35 item 3: `tfjob run` said "started (pid N)" with the supervisor's pid. The supervisor
// reports each container's start with the program's own pid.
TEST_P(PodSupervisor, Issue35EachContainersStartIsReportedWithTheProgramsPid) {
  SupervisorSpec spec;
  spec.uid = "u";
  spec.init_containers = {Sh("setup", "echo $$")};
  spec.containers = {Sh("tensorflow", "echo $$")};
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 0);
  std::istringstream pids(r.output);
  std::string init_pid, main_pid;
  pids >> init_pid >> main_pid;
  EXPECT_EQ(r.status, "u\tstart\tsetup\t" + init_pid + "\nu\texit\tsetup\t0\nu\tstart\ttensorflow\t" + main_pid + "\n");
}

TEST_P(PodSupervisor, AFailingInitContainerEndsTheAttemptWithItsExitCode) {
  SupervisorSpec spec;
  spec.uid = "u";
  spec.init_containers = {Sh("setup", "echo failing; exit 4")};
  spec.containers = {Sh("tensorflow", "echo must not run")};
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 4);
  EXPECT_EQ(r.output, "failing\n");
}

TEST_P(PodSupervisor, ASidecarStillRunningIsStoppedWhenTheMainContainerEnds) {
  SupervisorSpec spec;
  spec.uid = "u";
  spec.grace_period = std::chrono::milliseconds(200);
  spec.containers = {Sh("tensorflow", "sleep 0.3; echo done"), Sh("sidecar", "trap '' TERM; sleep 100")};
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(WithoutStarts(r.status), "u\texit\tsidecar\t137\n");
}

TEST_P(PodSupervisor, ProcessesThatCalledSetsidDoNotOutliveThePod) {
  int pids[2];
  ASSERT_EQ(pipe(pids), 0);
  SupervisorSpec spec;
  spec.uid = "u";
  // The daemon's pid goes out through fd 1 to the test; the daemon itself keeps no output pipe.
  spec.containers = {Sh("tensorflow", "setsid sleep 1000 </dev/null >/dev/null 2>&1 & echo $!")};
  Ran r = Supervise(spec);
  EXPECT_EQ(r.exit_code, 0);
  pid_t daemon = static_cast<pid_t>(std::stol(r.output));
  // Killed and reaped by the supervisor: no such process any more (not even a zombie).
  EXPECT_NE(access(("/proc/" + std::to_string(daemon) + "/stat").c_str(), F_OK), 0);
  close(pids[0]);
  close(pids[1]);
}

TEST(StatusLine, RoundTripsAndStaysOneAtomicLine) {
  StatusLine parsed;
  ASSERT_TRUE(ParseStatusLine("a\terror\tc\tcannot\tdo", &parsed));
  EXPECT_EQ(parsed.text, "cannot\tdo");
  std::string line = FormatStatusLine({"uid", "error", "c", std::string(10000, 'x') + "\nmore"});
  EXPECT_LT(line.size(), 4097u);
  EXPECT_EQ(line.find('\n'), line.size() - 1);
}

TEST(Descendants, FindsAGrandchildInAnotherSession) {
  pid_t child = fork();
  if (child == 0) {
    execl("/bin/sh", "sh", "-c", "setsid sleep 30 & wait", nullptr);
    _exit(127);
  }
  std::vector<pid_t> found;
  for (int i = 0; i < 200 && found.size() < 2; ++i) {
    usleep(10000);
    found = Descendants(getpid());
  }
  EXPECT_EQ(found.size(), 2u);
  EXPECT_TRUE(KillDescendants(getpid(), [] {
    while (waitpid(-1, nullptr, WNOHANG) > 0) {
    }
  }));
  EXPECT_THAT(Descendants(getpid()), ElementsAre());
}

}  // namespace
}  // namespace tfjob::local
