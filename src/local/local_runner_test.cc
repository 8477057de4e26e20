#include "local/local_runner.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/fixtures.h"

// LocalRunner (`tfjob run`) without a cluster: tiny real processes (/bin/sh) as replicas under
// their pod supervisors (forks of the test binary, as of tfjob), so the restart, success and
// stop rules run exactly as in `tfjob run`. Nothing here measures time: a replica that is
// expected to be stopped sleeps for 30 s, and a hang is caught by the alarm of each test (the
// process dies, the test fails).

namespace tfjob::local {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using ::testing::HasSubstr;

struct Ran {
  int code = -1;
  std::string out;
  api::JobStatus status;
  std::string table;
  PortMap ports;
};

class LocalRunnerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    alarm(90);  // a hang kills the test binary: the test fails, never blocks the suite
    dir_ = fs::temp_directory_path() / ("tfjob-runner-test-" + std::to_string(getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    alarm(0);
  }

  // A replica spec running `script` with /bin/sh. In a script, `$$` stands for `$` (Kubernetes'
  // $(VAR) expansion), so the shell's own $$ is written $$$$.
  static json Replica(int replicas, const std::string& restart_policy, const std::string& script) {
    json container = {{"name", "tensorflow"}, {"image", "busybox"}, {"command", {"/bin/sh", "-c", script}}};
    json spec = {{"replicas", replicas}, {"template", {{"spec", {{"containers", {container}}}}}}};
    if (!restart_policy.empty()) spec["restartPolicy"] = restart_policy;
    return spec;
  }

  static api::TfJob Job(const std::string& name, json replicas, json run_policy = json::object(),
                        const std::string& success_policy = "") {
    json spec = {{"tfReplicaSpecs", std::move(replicas)}};
    if (!run_policy.empty()) spec["runPolicy"] = std::move(run_policy);
    if (!success_policy.empty()) spec["successPolicy"] = success_policy;
    json job = {{"apiVersion", "kubeflow.org/v1"},
                {"kind", "TFJob"},
                {"metadata", {{"name", name}, {"namespace", "default"}}},
                {"spec", std::move(spec)}};
    return ::tfjob::testing::DefaultedJobFromYaml(job.dump());
  }

  static Ran Run(const api::TfJob& job, std::stop_token stop = {}, bool pod_zygote = true) {
    std::ostringstream out;
    RealClock clock;
    RunOptions options;
    options.pod_zygote = pod_zygote;
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    options.grace_period = std::chrono::seconds(2);
    Ran ran;
    {
      LocalRunner runner(job, options, clock, out);
      if (Status s = runner.Prepare(); !s.ok()) {
        ADD_FAILURE() << "Prepare: " << s.ToString();
        return ran;
      }
      ran.code = runner.Run(stop);
      ran.status = runner.status();
      ran.table = runner.FormatTable();
      ran.ports = runner.ports();
    }
    ran.out = out.str();
    return ran;
  }

  // How many times the replica was started.
  static int Starts(const Ran& ran, const std::string& replica) {
    const std::string needle = "tfjob: " + replica + " started (pid ";
    int n = 0;
    for (size_t at = ran.out.find(needle); at != std::string::npos; at = ran.out.find(needle, at + 1)) ++n;
    return n;
  }

  static std::string LastCondition(const Ran& ran) {
    if (ran.status.conditions.empty()) return "";
    const auto& c = ran.status.conditions.back();
    return c.type + ": " + c.message;
  }

  // The table row of one replica ("job-worker-0   Succeeded   1   0   0.1s").
  static std::string Row(const Ran& ran, const std::string& replica) {
    std::istringstream lines(ran.table);
    for (std::string line; std::getline(lines, line);)
      if (line.starts_with(replica + " ")) return line;
    return "";
  }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // A script that fails with `code` on its first attempt and exits 0 on the next.
  std::string FailOnce(const std::string& first_attempt) const {
    const std::string marker = Path("attempted");
    return "if [ ! -e " + marker + " ]; then touch " + marker + "; " + first_attempt + "; fi; exit 0";
  }

  fs::path dir_;
};

// Exit codes under restartPolicy ExitCode (docs/semantics.md 3.4): 128 and above (a signal, or
// a retryable code) restart the replica; below it fail the job at once.
TEST_F(LocalRunnerTest, ExitCodePolicyRestartsARetryableExitAndTheJobSucceeds) {
  for (const std::string first : {"exit 130", "kill -9 $$$$"}) {  // 130, then death by SIGKILL (137)
    fs::remove(Path("attempted"));
    Ran ran = Run(Job("retry", {{"Worker", Replica(1, "ExitCode", FailOnce(first))}}));
    EXPECT_EQ(ran.code, 0) << first << "\n" << ran.out;
    EXPECT_EQ(Starts(ran, "retry-worker-0"), 2) << first;
    EXPECT_EQ(ran.status.replica_statuses["Worker"].restarts, 1) << first;
    EXPECT_THAT(ran.out, HasSubstr("TFJobRestarting: job retry is restarting because Worker replica(s) failed."));
    EXPECT_THAT(LastCondition(ran), HasSubstr("Succeeded")) << first;
  }
}

TEST_F(LocalRunnerTest, ExitCodePolicyFailsThePermanentExitsAtOnce) {
  for (int code : {1, 127}) {
    Ran ran = Run(Job("perm", {{"Worker", Replica(1, "ExitCode", "exit " + std::to_string(code))}}));
    EXPECT_EQ(ran.code, 1) << code << "\n" << ran.out;
    EXPECT_EQ(Starts(ran, "perm-worker-0"), 1) << code;
    EXPECT_EQ(LastCondition(ran), "Failed: job \"perm\" is failing because \"Worker\" replica(s) failed.");
    EXPECT_THAT(Row(ran, "perm-worker-0"), HasSubstr("Failed")) << ran.table;
  }
}

TEST_F(LocalRunnerTest, OnFailureAndAlwaysRestartAnyFailure) {
  for (const std::string policy : {"OnFailure", "Always"}) {
    fs::remove(Path("attempted"));
    Ran ran = Run(Job("flaky", {{"Worker", Replica(1, policy, FailOnce("exit 3"))}}));
    EXPECT_EQ(ran.code, 0) << policy << "\n" << ran.out;
    EXPECT_EQ(Starts(ran, "flaky-worker-0"), 2) << policy;
    EXPECT_THAT(ran.out, HasSubstr("tfjob: flaky-worker-0 exited with code 3")) << policy;
  }
}

TEST_F(LocalRunnerTest, NeverRestartsNothingEvenARetryableExit) {
  Ran ran = Run(Job("never", {{"Worker", Replica(1, "Never", FailOnce("kill -9 $$$$"))}}));
  EXPECT_EQ(ran.code, 1) << ran.out;
  EXPECT_EQ(Starts(ran, "never-worker-0"), 1);
  EXPECT_THAT(ran.out, HasSubstr("tfjob: never-worker-0 exited with code 137"));
  EXPECT_THAT(LastCondition(ran), HasSubstr("Failed"));
}

TEST_F(LocalRunnerTest, BackoffLimitEndsTheRestarts) {
  for (int limit : {0, 2}) {
    Ran ran = Run(Job("backoff", {{"Worker", Replica(1, "OnFailure", "exit 3")}}, {{"backoffLimit", limit}}));
    EXPECT_EQ(ran.code, 1) << limit << "\n" << ran.out;
    EXPECT_EQ(Starts(ran, "backoff-worker-0"), limit + 1) << limit;  // the first run and `limit` restarts
    EXPECT_EQ(LastCondition(ran), "Failed: Job backoff has failed because it has reached the specified backoff limit");
  }
}

// Success policy (docs/semantics.md 3.5): the chief (or master) ends the job; without one, worker 0.
TEST_F(LocalRunnerTest, TheChiefsSuccessEndsTheJobAndStopsTheWorkers) {
  Ran ran = Run(Job("chief", {{"Chief", Replica(1, "", "exit 0")}, {"Worker", Replica(2, "", "exec sleep 30")}}));
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_THAT(LastCondition(ran), HasSubstr("Succeeded"));
  EXPECT_THAT(Row(ran, "chief-chief-0"), HasSubstr("Succeeded")) << ran.table;
  EXPECT_THAT(Row(ran, "chief-worker-0"), HasSubstr("Stopped")) << ran.table;
  EXPECT_THAT(Row(ran, "chief-worker-1"), HasSubstr("Stopped")) << ran.table;
}

TEST_F(LocalRunnerTest, WithoutAChiefWorkerZerosSuccessEndsTheJob) {
  // Worker 0 ends at once, worker 1 would run for 30 s.
  const std::string script = "case \"$TF_CONFIG\" in *'\"index\":0'*) exit 0;; esac; exec sleep 30";
  Ran ran = Run(Job("w0", {{"Worker", Replica(2, "", script)}}));
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_THAT(Row(ran, "w0-worker-0"), HasSubstr("Succeeded")) << ran.table;
  EXPECT_THAT(Row(ran, "w0-worker-1"), HasSubstr("Stopped")) << ran.table;
}

TEST_F(LocalRunnerTest, AllWorkersWaitsForEveryWorker) {
  // Worker 1 finishes a second after worker 0 has: the job waits for it, nothing is stopped.
  const std::string w0 = Path("worker-0-done"), w1 = Path("worker-1-done");
  const std::string script = "case \"$TF_CONFIG\" in *'\"index\":0'*) touch " + w0 + "; exit 0;; esac; " +
                             "while [ ! -e " + w0 + " ]; do sleep 0.05; done; sleep 1; touch " + w1 + "; exit 0";
  Ran ran = Run(Job("all", {{"Worker", Replica(2, "", script)}}, json::object(), "AllWorkers"));
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_TRUE(fs::exists(w1)) << "worker 1 was stopped before it finished\n" << ran.table;
  EXPECT_THAT(Row(ran, "all-worker-1"), HasSubstr("Succeeded")) << ran.table;
  EXPECT_EQ(ran.status.replica_statuses["Worker"].succeeded, 2);
}

// Every replica gets its own TF_CONFIG: the whole cluster on the reserved 127.0.0.1 ports, its
// own task.
// Through the pod zygote, and forked from the runner as when the zygote cannot be started: the
// same ports and the same TF_CONFIG.
TEST_F(LocalRunnerTest, EachReplicaGetsTheClusterAndItsOwnTask) {
  for (bool pod_zygote : {true, false}) {
    SCOPED_TRACE(pod_zygote ? "through the pod zygote" : "forked from the runner");
    const std::string up = Path(pod_zygote ? "up-zygote" : "up-fork");
    // Each prints its TF_CONFIG and checks in; the workers end once all three have.
    const std::string report = "echo \"$TF_CONFIG\"; echo x >> " + up + "; ";
    const std::string wait_all = "while [ \"$$(wc -l < " + up + ")\" -lt 3 ]; do sleep 0.05; done; ";
    Ran ran = Run(Job("tfc", {{"PS", Replica(1, "", report + "exec sleep 30")},
                              {"Worker", Replica(2, "", report + wait_all + "exit 0")}}),
                  {}, pod_zygote);
    ASSERT_EQ(ran.code, 0) << ran.out;
    auto endpoint = [&](api::ReplicaType type, int index) {
      return "127.0.0.1:" + std::to_string(ran.ports.at({type, index}));
    };
    const json cluster = {{"ps", {endpoint(api::ReplicaType::kPS, 0)}},
                          {"worker", {endpoint(api::ReplicaType::kWorker, 0), endpoint(api::ReplicaType::kWorker, 1)}}};
    std::set<int> ports;
    for (const auto& [key, port] : ran.ports) ports.insert(port);
    EXPECT_EQ(ports.size(), 3u) << "ports are unique across the job";
    std::map<std::string, json> seen;  // prefix -> TF_CONFIG
    std::istringstream lines(ran.out);
    for (std::string line; std::getline(lines, line);) {
      for (const char* prefix : {"[ps-0] ", "[worker-0] ", "[worker-1] "})
        if (line.starts_with(prefix)) seen[prefix] = json::parse(line.substr(std::string(prefix).size()));
    }
    ASSERT_EQ(seen.size(), 3u) << ran.out;
    for (const auto& [prefix, tf_config] : seen) {
      EXPECT_EQ(tf_config["cluster"], cluster) << prefix;
      EXPECT_EQ(tf_config["environment"], "cloud") << prefix;
    }
    EXPECT_EQ(seen["[ps-0] "]["task"], json({{"type", "ps"}, {"index", 0}}));
    EXPECT_EQ(seen["[worker-0] "]["task"], json({{"type", "worker"}, {"index", 0}}));
    EXPECT_EQ(seen["[worker-1] "]["task"], json({{"type", "worker"}, {"index", 1}}));
  }
}

bool Alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  if (text.empty()) return false;
  auto end = text.rfind(") ");
  return end != std::string::npos && text.substr(end + 2, 1) != "Z";
}

// Ctrl-C / SIGTERM (the stop token): every replica is stopped, nothing is left, exit code 130.
TEST_F(LocalRunnerTest, AnInterruptStopsEveryReplicaAndLeavesNoProcess) {
  const std::string pids = Path("pids");
  std::stop_source interrupt;
  std::jthread interrupter([&](std::stop_token done) {
    // Once both replicas run (each wrote its shell's pid), as a user pressing Ctrl-C would.
    for (;;) {
      if (done.stop_requested()) return;
      std::ifstream in(pids);
      int lines = 0;
      for (std::string l; std::getline(in, l);) ++lines;
      if (lines >= 2) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    interrupt.request_stop();
  });
  Ran ran = Run(Job("stop", {{"Worker", Replica(2, "OnFailure", "echo $$$$ >> " + pids + "; exec sleep 30")}}),
                interrupt.get_token());
  interrupter.request_stop();
  interrupter.join();
  EXPECT_EQ(ran.code, 130) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("tfjob: interrupted; stopping every replica"));
  EXPECT_EQ(Starts(ran, "stop-worker-0"), 1) << "a stopped replica is not restarted";
  EXPECT_THAT(Row(ran, "stop-worker-0"), HasSubstr("Stopped")) << ran.table;
  EXPECT_THAT(Row(ran, "stop-worker-1"), HasSubstr("Stopped")) << ran.table;
  std::ifstream in(pids);
  int checked = 0;
  for (pid_t pid; in >> pid; ++checked) EXPECT_FALSE(Alive(pid)) << "replica process " << pid << " survived";
  EXPECT_EQ(checked, 2);
}

// Issue 25 item 6: `tfjob run` passed a replica's escape sequences (the terminal's title, clear
// screen) to the terminal as they were, while `tfjob logs` escaped them. Both escape now.
TEST_F(LocalRunnerTest, Issue25AReplicasEscapeSequencesAreShownEscapedNotSentToTheTerminal) {
  Ran ran = Run(Job("esc", {{"Worker", Replica(1, "Never", R"(printf 'a\033]0;title\007b\033[2J\r\n')")}}));
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("[worker-0] a\\x1b]0;title\\ab\\x1b[2J\n"));
  EXPECT_EQ(ran.out.find('\x1b'), std::string::npos) << ran.out;
  EXPECT_EQ(ran.out.find('\a'), std::string::npos) << ran.out;
}

}  // namespace
}  // namespace tfjob::local

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);  // as `tfjob run` does: a replica gone is EPIPE, not a dead runner
  ::testing::InitGoogleMock(&argc, argv);
  return RUN_ALL_TESTS();
}
