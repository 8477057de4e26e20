#pragma once
// What every cluster command shares: the connection to the API server (Session), the one lock on
// stdout (Output), and how a failed request is told to the user with its exit code (docs/cli.md).

#include <chrono>
#include <memory>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/cli_args.h"
#include "cli/command.h"
#include "cli/job_view.h"
#include "common/clock.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "kube/curl_transport.h"
#include "kube/kube_config.h"
#include "kube/rest_client.h"

namespace tfjob::cli {

// Every write to stdout goes through one lock: log streams, the table and the progress lines.
class Output {
 public:
  explicit Output(std::ostream& out) : out_(&out) {}
  void Line(const std::string& line) TFJOB_EXCLUDES(mu_);
  void Raw(const std::string& text) TFJOB_EXCLUDES(mu_);

 private:
  Mutex mu_;
  std::ostream* const out_ TFJOB_PT_GUARDED_BY(mu_);
};

struct Session {
  kube::KubeConfig config;
  RealClock clock;
  std::unique_ptr<kube::CurlTransport> transport;
  std::unique_ptr<kube::RestClient> client;
  std::string ns;  // resolved: -n, else the context's, else "default"; "" with -A
};

// The session of a command: the kubeconfig as kubectl resolves it, a client bounded by
// --request-timeout.
StatusOr<std::unique_ptr<Session>> Connect(const ConnectionArgs& args, const CliIo& io);
// A command's session, or nullptr after saying on stderr why there is none (the command exits 2).
std::unique_ptr<Session> ConnectOrSay(const ConnectionArgs& args, const CliIo& io);

// A failed request as the user reads it, with the exit code: the server unreachable (2, naming
// it), the server's refusal (1).
int Fail(const Session& s, const Status& status, std::ostream& err, const std::string& what = "");
// The exit code of a failed GET of TFJob `name`: "not found" (1) when the TFJob is not there (not
// when the server does not serve TFJobs at all), else as Fail reports it.
int JobGetFailed(const Session& s, const std::string& name, const Status& status, std::ostream& err);
// A watch given up on (Tracker::GaveUp): "tfjob: the API server URL (SOURCE): WHY".
void SayGaveUp(const Session& s, const std::string& why, std::ostream& err);

// "TFJob ns/name", escaped.
std::string JobRef(const std::string& ns, const std::string& name);
// The pods of `pods` that the job `job_uid` owns (all when it is empty), sorted by name.
std::vector<PodView> JobPods(const std::vector<nlohmann::json>& pods, const std::string& job_uid);
// The label selector of a job's pods.
std::string JobPodSelector(const std::string& job);
// The path of a container's log, with `extra` query parameters ("&follow=true").
std::string LogPath(const std::string& ns, const std::string& pod, const std::string& container,
                    const std::string& extra);
// "90s".
std::string FormatMs(std::chrono::milliseconds d);

}  // namespace tfjob::cli
