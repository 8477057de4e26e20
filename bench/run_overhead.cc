// What `tfjob run` costs in CPU over the processes it runs (issue 25 item 6): a generated TFJob of
// N Workers, each a short command (`true`, or `sh -c 'exit 0'`), run with `tfjob run --quiet`,
// against a plain fork/exec of the same N processes from a small process (all started, then all
// waited for, as `tfjob run` starts them). CPU is user + sys of the whole process tree
// (getrusage(RUSAGE_CHILDREN) around each run: every process below is reaped by its parent, so
// the whole tree is counted). Rounds alternate the two (and an optional second tfjob binary, to
// compare builds in the same conditions); the ratio is the round's tfjob CPU over the round's
// plain CPU, and the median of the rounds is printed last.
//
//   build/release/bench/run_overhead --tfjob build/release/tfjob [--compare OTHER_TFJOB]
//       [--replicas 300] [--rounds 5] [--command true|sh]

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Cost {
  double user = 0, sys = 0, wall = 0;
  int rc = 0;
  double cpu() const { return user + sys; }
};

double Seconds(const timeval& tv) {
  return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) / 1e6;
}

// Runs `body` in a child and returns the CPU of the child and of everything below it.
template <typename Body>
Cost Measure(Body body) {
  rusage before{}, after{};
  getrusage(RUSAGE_CHILDREN, &before);
  auto start = std::chrono::steady_clock::now();
  pid_t pid = fork();
  if (pid < 0) {
    std::perror("fork");
    std::exit(1);
  }
  if (pid == 0) _exit(body());
  int status = 0;
  waitpid(pid, &status, 0);
  Cost c;
  c.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  getrusage(RUSAGE_CHILDREN, &after);
  c.user = Seconds(after.ru_utime) - Seconds(before.ru_utime);
  c.sys = Seconds(after.ru_stime) - Seconds(before.ru_stime);
  c.rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return c;
}

// The plain launcher: fork + exec of every process, then wait for all of them.
int Plain(const std::vector<std::string>& argv_s, int n) {
  std::vector<char*> argv;
  for (const auto& s : argv_s) argv.push_back(const_cast<char*>(s.c_str()));
  argv.push_back(nullptr);
  for (int i = 0; i < n; ++i) {
    pid_t pid = fork();
    if (pid == 0) {
      execvp(argv[0], argv.data());
      _exit(127);
    }
    if (pid < 0) return 1;
  }
  int failed = 0;
  for (int status = 0; wait(&status) > 0;)
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++failed;
  return failed == 0 ? 0 : 1;
}

int TfjobRun(const std::string& tfjob, const std::string& job) {
  int devnull = open("/dev/null", O_WRONLY);
  dup2(devnull, 1);
  execl(tfjob.c_str(), tfjob.c_str(), "run", "--quiet", job.c_str(), static_cast<char*>(nullptr));
  _exit(127);
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

void Usage() {
  std::fprintf(stderr,
               "usage: run_overhead --tfjob PATH [--compare PATH] [--replicas N] [--rounds R] [--command true|sh]\n");
  std::exit(2);
}

}  // namespace

int main(int argc, char** argv) {
  std::string tfjob, compare, command = "true";
  int replicas = 300, rounds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) Usage();
    std::string v = argv[++i];
    if (a == "--tfjob")
      tfjob = v;
    else if (a == "--compare")
      compare = v;
    else if (a == "--replicas")
      replicas = std::atoi(v.c_str());
    else if (a == "--rounds")
      rounds = std::atoi(v.c_str());
    else if (a == "--command")
      command = v;
    else
      Usage();
  }
  if (tfjob.empty() || replicas <= 0 || rounds <= 0 || (command != "true" && command != "sh")) Usage();
  std::vector<std::string> argv_s =
      command == "true" ? std::vector<std::string>{"true"} : std::vector<std::string>{"sh", "-c", "exit 0"};
  std::string json_cmd = command == "true" ? R"(["true"])" : R"(["sh", "-c", "exit 0"])";

  char dir_template[] = "/tmp/tfjob-run-overhead-XXXXXX";
  if (mkdtemp(dir_template) == nullptr) {
    std::perror("mkdtemp");
    return 1;
  }
  const std::string job = std::string(dir_template) + "/job.json";
  std::ofstream(job) << R"({"apiVersion": "kubeflow.org/v1", "kind": "TFJob", "metadata": {"name": "overhead"},)"
                     << R"( "spec": {"tfReplicaSpecs": {"Worker": {"replicas": )" << replicas
                     << R"(, "restartPolicy": "Never", "template": {"spec": {"containers": [)"
                     << R"({"name": "tensorflow", "image": "none", "command": )" << json_cmd << "}]}}}}}}\n";

  std::printf("%d replicas of %s; CPU = user+sys of the whole process tree, seconds\n", replicas,
              command == "true" ? "`true`" : "`sh -c 'exit 0'`");
  std::printf("%-6s %-8s %8s %8s %8s %8s %7s\n", "round", "what", "user", "sys", "cpu", "wall", "ratio");
  std::vector<double> ratios, ratios_compare;
  for (int r = 1; r <= rounds; ++r) {
    Cost plain = Measure([&] { return Plain(argv_s, replicas); });
    std::printf("%-6d %-8s %8.3f %8.3f %8.3f %8.3f %7s\n", r, "plain", plain.user, plain.sys, plain.cpu(), plain.wall,
                "1.00");
    auto one = [&](const std::string& bin, const char* label, std::vector<double>* into) {
      Cost c = Measure([&] { return TfjobRun(bin, job); });
      double ratio = c.cpu() / plain.cpu();
      into->push_back(ratio);
      std::printf("%-6d %-8s %8.3f %8.3f %8.3f %8.3f %7.2f%s\n", r, label, c.user, c.sys, c.cpu(), c.wall, ratio,
                  c.rc == 0 ? "" : "  (exit code not 0!)");
    };
    one(tfjob, "tfjob", &ratios);
    if (!compare.empty()) one(compare, "compare", &ratios_compare);
    std::fflush(stdout);
  }
  std::printf("median ratio tfjob/plain: %.2f\n", Median(ratios));
  if (!compare.empty()) std::printf("median ratio compare/plain: %.2f\n", Median(ratios_compare));
  std::remove(job.c_str());
  rmdir(dir_template);
  return 0;
}
