#pragma once
// `tfjob dashboard`'s source (docs/dashboard.md): the cluster's watches feed the dashboard's Model.
// One controller::Reflector per kind (TFJobs; their pods, by the job-name label; events; Kueue's
// Workloads and the gang's PodGroups when the server serves them), each on its own jthread, each
// object decoded and trimmed by the model as the CLI's views decode it. The logs of a job are
// followed (cli::LogFollower, bounded as `logs -f`) while a page reads them, and stopped a minute
// after the last read. Suspend, resume and delete with the user's own credentials.
//
// The model is fed through the Model's Replace/Apply, so another source (a shared informer
// cache, `tfjob run`'s runner) can feed the same pages.

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cli/dashboard_model.h"
#include "cli/dashboard_server.h"
#include "cli/log_follower.h"
#include "cli/session.h"
#include "common/thread_annotations.h"
#include "controller/reflector.h"

namespace tfjob::cli::dashboard {

class ClusterSource : public Actions, public LogDemand {
 public:
  // `ns`: "" for every namespace (-A).
  ClusterSource(Session& session, Model& model, std::string ns, int max_log_requests);
  ~ClusterSource() override;
  // Starts the watches (asks discovery once which optional APIs are served).
  void Start();
  void Stop();
  // Every started watch has listed once.
  bool Synced() const;

  StatusOr<std::string> Act(const std::string& action, const std::string& ns, const std::string& name) override;
  void Want(const std::string& ns, const std::string& name) override TFJOB_EXCLUDES(mu_);

 private:
  struct Feed;
  struct Followed {
    std::unique_ptr<LogFollower> follower;
    Clock::SteadyTime last_read;
  };
  void Watch(Kind kind, controller::ListWatchSpec spec);
  // The log streams' loop: each followed job's pods given to its LogFollower when they change;
  // streams nobody read for a minute stopped.
  void PumpLogs(std::stop_token stop);

  Session& s_;
  Model& model_;
  const std::string ns_;
  const int max_log_requests_;
  std::vector<std::unique_ptr<Feed>> feeds_;
  Mutex mu_;
  std::map<std::string, Followed> followed_ TFJOB_GUARDED_BY(mu_);
  std::jthread log_pump_;
};

}  // namespace tfjob::cli::dashboard
