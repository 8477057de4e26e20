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
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "testing/fake_clock.h"
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
  std::vector<std::string> failure_reasons;
};

// An ostream's buffer that another thread may read while the runner writes (Text()).
class SharedText : public std::streambuf {
 public:
  std::string Text() {
    std::lock_guard lock(mu_);
    return text_;
  }
  bool Contains(const std::string& needle) { return Text().find(needle) != std::string::npos; }

 protected:
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) {
      std::lock_guard lock(mu_);
      text_.push_back(static_cast<char>(c));
    }
    return c;
  }
  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard lock(mu_);
    text_.append(s, static_cast<size_t>(n));
    return n;
  }

 private:
  std::mutex mu_;  // guards text_
  std::string text_;
};

// Waits (at most 60 s) until `text` shows `needle`.
bool AwaitText(SharedText& text, const std::string& needle) {
  for (int i = 0; i < 3000; ++i) {
    if (text.Contains(needle)) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

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

  // Restarts wait a short crash-loop back-off here (50 ms doubling up to 200 ms), unless the
  // options say otherwise.
  static RunOptions Options(bool pod_zygote = true) {
    RunOptions options;
    options.pod_zygote = pod_zygote;
    options.base_env = {{"PATH", "/usr/bin:/bin"}};
    options.grace_period = std::chrono::seconds(2);
    options.restart_backoff = {std::chrono::milliseconds(50), std::chrono::milliseconds(200)};
    return options;
  }

  static Ran Run(const api::TfJob& job, std::stop_token stop = {}, bool pod_zygote = true) {
    RealClock clock;
    return Run(job, Options(pod_zygote), clock, stop);
  }

  static Ran Run(const api::TfJob& job, const RunOptions& options, const Clock& clock, std::stop_token stop = {},
                 std::streambuf* buf = nullptr) {
    std::ostringstream collected;
    std::ostream shared(buf);
    std::ostream& out = buf != nullptr ? shared : collected;
    Ran ran;
    {
      LocalRunner runner(job, options, const_cast<Clock&>(clock), out);
      if (Status s = runner.Prepare(); !s.ok()) {
        ADD_FAILURE() << "Prepare: " << s.ToString();
        return ran;
      }
      ran.code = runner.Run(stop);
      ran.status = runner.status();
      ran.table = runner.FormatTable();
      ran.ports = runner.ports();
      ran.failure_reasons = runner.failure_reasons();
    }
    ran.out = buf != nullptr ? static_cast<SharedText*>(buf)->Text() : collected.str();
    return ran;
  }

  // The fields of a replica's table row: name, state, restarts, exit code, run time, total, ...
  static std::vector<std::string> Fields(const Ran& ran, const std::string& replica) {
    std::istringstream in(Row(ran, replica));
    std::vector<std::string> out;
    for (std::string f; in >> f;) out.push_back(f);
    return out;
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

// Issue 35 item 1: a replica that fails at once (the typo job: `python3 trian.py` under
// OnFailure) restarted at once, forever (74 times in 30 s). Now the kubelet's crash-loop back-off
// holds each restart after the first: 10 s, then 20 s, ... counted on the runner's clock (a
// FakeClock here, which moves only when the test says). An interrupt during a wait stops the run
// at once.
TEST_F(LocalRunnerTest, Issue35RestartsWaitTheCrashLoopBackOffAndAnInterruptDuringTheWaitStops) {
  FakeClock clock;
  RunOptions options = Options();
  options.restart_backoff = {};  // the kubelet's: 10 s doubling up to 5 min
  SharedText text;
  std::stop_source interrupt;
  std::jthread driver([&](std::stop_token) {
    // Started at once after the first failure; the second failure waits 10 s.
    if (AwaitText(text, "tfjob: crash-worker-0 CrashLoopBackOff: back-off 10s, next start in 10 s")) {
      clock.Advance(std::chrono::seconds(10));
      AwaitText(text, "tfjob: crash-worker-0 CrashLoopBackOff: back-off 20s, next start in 20 s");
    }
    interrupt.request_stop();  // during the 20 s wait, which the clock never ends
  });
  Ran ran =
      Run(Job("crash", {{"Worker", Replica(1, "OnFailure", "exit 2")}}), options, clock, interrupt.get_token(), &text);
  driver.join();
  EXPECT_EQ(ran.code, 130) << ran.out;
  EXPECT_EQ(Starts(ran, "crash-worker-0"), 3) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("back-off 20s, next start in 20 s")) << ran.out;
  // Three failures, three restarts decided by the core; the last one never started.
  EXPECT_EQ(ran.status.replica_statuses["Worker"].restarts, 3);
  auto row = Fields(ran, "crash-worker-0");
  ASSERT_GE(row.size(), 4u) << ran.table;
  EXPECT_EQ(row[1], "Stopped") << ran.table;
  EXPECT_EQ(row[2], "3") << ran.table;
  EXPECT_EQ(row[3], "2") << ran.table;
}

// Issue 35 item 3: with cleanPodPolicy Running or All, the replicas the job's end stopped showed
// a restart each, and a succeeded chief one too. Restarts are the core's: none here.
TEST_F(LocalRunnerTest, Issue35ReplicasStoppedByTheJobsEndAreNotRestarts) {
  for (const std::string clean : {"Running", "All", "None"}) {
    Ran ran =
        Run(Job("clean", {{"Chief", Replica(1, "Never", "exit 0")}, {"Worker", Replica(2, "Never", "exec sleep 30")}},
                {{"cleanPodPolicy", clean}}));
    EXPECT_EQ(ran.code, 0) << clean << "\n" << ran.out;
    for (const char* replica : {"clean-chief-0", "clean-worker-0", "clean-worker-1"}) {
      auto row = Fields(ran, replica);
      ASSERT_GE(row.size(), 3u) << ran.table;
      EXPECT_EQ(row[2], "0") << clean << " " << replica << "\n" << ran.table;
    }
  }
  // A worker killed once: one restart, also when the clean-up deletes it at the end.
  fs::remove(Path("attempted"));
  Ran ran =
      Run(Job("killed", {{"Worker", Replica(1, "OnFailure", FailOnce("kill -9 $$$$"))}}, {{"cleanPodPolicy", "All"}}));
  EXPECT_EQ(ran.code, 0) << ran.out;
  auto row = Fields(ran, "killed-worker-0");
  ASSERT_GE(row.size(), 6u) << ran.table;
  EXPECT_EQ(row[1], "Succeeded");
  EXPECT_EQ(row[2], "1") << ran.table;
}

// Issue 35 item 3: one line per failure says why, and the summary keeps those that ended the job.
TEST_F(LocalRunnerTest, Issue35EachFailureIsExplained) {
  Ran perm = Run(Job("perm", {{"Worker", Replica(1, "ExitCode", "exit 1")}}));
  EXPECT_EQ(perm.code, 1);
  const std::string why =
      "perm-worker-0 failed with exit code 1: exit 1 is permanent under restartPolicy ExitCode (only 128 and above, a "
      "death by a signal, is restarted); not restarted: the job fails";
  EXPECT_THAT(perm.out, HasSubstr("tfjob: " + why));
  EXPECT_THAT(perm.failure_reasons, ::testing::ElementsAre(why));

  Ran limit = Run(Job("lim", {{"Worker", Replica(1, "OnFailure", "exit 3")}}, {{"backoffLimit", 1}}));
  EXPECT_EQ(limit.code, 1) << limit.out;
  EXPECT_THAT(limit.out, HasSubstr("tfjob: lim-worker-0 failed with exit code 3: restarted under restartPolicy "
                                   "OnFailure (the job's restart 1 of backoffLimit 1)"));
  EXPECT_THAT(limit.failure_reasons,
              ::testing::ElementsAre("lim-worker-0 failed with exit code 3: not restarted: the job has used its "
                                     "backoffLimit 1 (1 restart so far)",
                                     "backoffLimit 1 is used up: 1 restart so far (lim-worker-0 1), and the failure of "
                                     "lim-worker-0 would make 2. The limit counts every replica's restarts together"));
  // Several replicas: the summary says that each failing replica spends a restart.
  Ran two = Run(Job("two", {{"Worker", Replica(2, "OnFailure", "exit 3")}}, {{"backoffLimit", 1}}));
  EXPECT_EQ(two.code, 1) << two.out;
  ASSERT_FALSE(two.failure_reasons.empty()) << two.out;
  EXPECT_THAT(two.failure_reasons.back(), HasSubstr("backoffLimit 1 is used up: "));
  EXPECT_THAT(two.failure_reasons.back(), HasSubstr("each replica that fails spends a restart"));
}

// Issue 35 item 2: each replica with nvidia.com/gpu gets devices of its own, kept across its
// restarts; one without gets CUDA_VISIBLE_DEVICES="" (as a pod without GPUs).
TEST_F(LocalRunnerTest, Issue35EachReplicaGetsGpusOfItsOwn) {
  RunOptions options = Options();
  options.gpus = {{"0", "1", "2", "3"}, "CUDA_VISIBLE_DEVICES=0,1,2,3"};
  options.base_env.emplace_back("CUDA_VISIBLE_DEVICES", "0,1,2,3");
  // The workers end only once the PS has printed (at most ~10 s): the job's end stops the PS.
  const std::string ps_up = Path("ps-up");
  const std::string show =
      "echo \"gpus=[$$CUDA_VISIBLE_DEVICES] nv=[$$NVIDIA_VISIBLE_DEVICES]\"; for i in $$(seq 200); "
      "do [ -e " +
      ps_up + " ] && break; sleep 0.05; done; ";
  json worker = Replica(3, "OnFailure", show + FailOnce("exit 3"));
  worker["template"]["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", "1"}, {"cpu", "2"}}}};
  json ps = Replica(1, "",
                    "echo \"gpus=[$${CUDA_VISIBLE_DEVICES-unset}] nv=[$$NVIDIA_VISIBLE_DEVICES]\"; touch " + ps_up +
                        "; exec sleep 30");
  RealClock clock;
  Ran ran =
      Run(Job("gpu", {{"PS", ps}, {"Worker", worker}}, {{"cleanPodPolicy", "All"}}, "AllWorkers"), options, clock);
  EXPECT_EQ(ran.code, 0) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("[ps-0] gpus=[] nv=[void]"));
  // Every attempt of worker i (one of them failed once and restarted) sees device i alone.
  std::map<int, int> lines;
  std::istringstream in(ran.out);
  for (std::string line; std::getline(in, line);) {
    if (!line.starts_with("[worker-")) continue;
    const int i = line[8] - '0';
    const std::string d = std::to_string(i);
    EXPECT_EQ(line, "[worker-" + d + "] gpus=[" + d + "] nv=[" + d + "]");
    ++lines[i];
  }
  EXPECT_EQ(lines.size(), 3u) << ran.out;
  EXPECT_EQ(lines[0] + lines[1] + lines[2], 3 + ran.status.replica_statuses["Worker"].restarts) << ran.out;
  EXPECT_THAT(ran.out, HasSubstr("note: a local run does not apply these resources: limits.cpu (Worker)"));
  auto row = Fields(ran, "gpu-worker-2");
  ASSERT_GE(row.size(), 7u) << ran.table;
  EXPECT_EQ(row[6], "2") << ran.table;
}

TEST_F(LocalRunnerTest, Issue35AJobNeedingMoreGpusThanThereAreIsRefusedBeforeAnythingStarts) {
  RunOptions options = Options();
  options.gpus = {{"0", "1"}, "CUDA_VISIBLE_DEVICES=0,1"};
  json worker = Replica(3, "", "exit 0");
  worker["template"]["spec"]["containers"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
  RealClock clock;
  std::ostringstream out;
  LocalRunner runner(Job("big", {{"Worker", worker}}), options, clock, out);
  Status s = runner.Prepare();
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(),
            "this job needs 3 GPUs (nvidia.com/gpu: 3 for 3 Worker) but this machine offers 2 (0,1), from "
            "CUDA_VISIBLE_DEVICES=0,1; give the devices with --gpus LIST or CUDA_VISIBLE_DEVICES, or ask for fewer");
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
