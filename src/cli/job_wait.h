#pragma once
// `submit --wait`: follows one TFJob and its pods until the job ends (0 Succeeded, 1 Failed or
// deleted), the time-out (124) or a stop request (130), showing the replicas as the live frame
// (local/replica_view.h, shared with `tfjob run`) or as change lines, and with --follow the
// replicas' logs.

#include <chrono>
#include <optional>
#include <stop_token>
#include <string>

#include "cli/command.h"
#include "cli/log_follower.h"
#include "cli/session.h"

namespace tfjob::cli {

struct WaitOptions {
  bool table = true;    // the live table (terminal) or change lines
  bool follow = false;  // stream logs
  int max_log_requests = kDefaultMaxLogRequests;
  std::optional<std::chrono::milliseconds> timeout;
  bool delete_on_interrupt = false;
};

int WaitForJob(Session& s, const std::string& ns, const std::string& name, const WaitOptions& options, const CliIo& io,
               std::stop_token stop);

}  // namespace tfjob::cli
