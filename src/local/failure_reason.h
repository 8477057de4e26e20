#pragma once
// Why a replica's attempt failed and what became of it, in one line `tfjob run` prints (and
// repeats in its summary for the failures that ended the job): the exit code and its class under
// restartPolicy ExitCode, whether the core restarted it, and the job's restarts against its
// backoffLimit. For a job that failed on backoffLimit, which replicas spent it. Pure string
// building (docs/local.md, "The summary").

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "api/tfjob.h"

namespace tfjob::local {

// What the core decided about a failed attempt.
enum class FailureFate {
  kRestarted,     // its pod deleted to be created again
  kPermanent,     // not restartable under its policy: the job fails
  kBackoffLimit,  // restartable, but the job reached its backoffLimit: the job fails
  kJobEnded,      // the job ended otherwise in the same pass (succeeded, deadline, ...)
  kKept,          // not restarted and the job goes on (a dynamic worker)
};

struct Failure {
  std::string replica;  // "job-worker-0"
  int exit_code = 1;
  api::RestartPolicy policy = api::RestartPolicy::kNever;
  FailureFate fate = FailureFate::kPermanent;
  int job_restarts = 0;  // the job's restarts so far, every replica's (this one's included)
  std::optional<int32_t> backoff_limit;
};

// "job-worker-0 failed with exit code 1: exit 1 is permanent under restartPolicy ExitCode
// (only 128 and above, a death by a signal, is restarted): not restarted".
std::string ExplainFailure(const Failure& f);

// The class of `code` under restartPolicy ExitCode: "exit 1 is permanent ..." or "exit 137 is
// retryable ... (killed by signal 9)".
std::string ExitCodeClass(int code);

// A job that failed on `limit`: "backoffLimit 2 is used up: 2 restarts so far (job-worker-0 1,
// job-worker-1 1), and the failure of job-worker-2 would make 3 ...", from every replica's
// restarts (those with none left out) and the replicas whose failures went past the limit.
std::string ExplainBackoffLimit(int32_t limit, const std::vector<std::pair<std::string, int>>& restarts,
                                const std::vector<std::string>& failing);

}  // namespace tfjob::local
