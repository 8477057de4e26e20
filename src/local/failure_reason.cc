#include "local/failure_reason.h"

#include "api/wire_enum.h"
#include "tfjob/core/replica_pods.h"

namespace tfjob::local {
namespace {

std::string Policy(api::RestartPolicy p) {
  return "restartPolicy " + std::string(api::EnumName(p));
}

std::string Restarts(int n) {
  return std::to_string(n) + (n == 1 ? " restart" : " restarts");
}

std::string AgainstLimit(const Failure& f) {
  if (!f.backoff_limit) return "the job's restart " + std::to_string(f.job_restarts) + ", no backoffLimit";
  return "the job's restart " + std::to_string(f.job_restarts) + " of backoffLimit " + std::to_string(*f.backoff_limit);
}

}  // namespace

std::string ExitCodeClass(int code) {
  const std::string exit = "exit " + std::to_string(code);
  if (!core::IsRetryableExitCode(code))
    return exit + " is permanent under restartPolicy ExitCode (only 128 and above, a death by a signal, is restarted)";
  std::string why = code > 128 && code < 128 + 65 ? " (killed by signal " + std::to_string(code - 128) + ")" : "";
  return exit + " is retryable under restartPolicy ExitCode" + why;
}

std::string ExplainFailure(const Failure& f) {
  std::string line = f.replica + " failed with exit code " + std::to_string(f.exit_code) + ": ";
  const bool exit_code_policy = f.policy == api::RestartPolicy::kExitCode;
  if (exit_code_policy) line += ExitCodeClass(f.exit_code) + "; ";
  switch (f.fate) {
    case FailureFate::kRestarted:
      return line + "restarted" + (exit_code_policy ? "" : " under " + Policy(f.policy)) + " (" + AgainstLimit(f) + ")";
    case FailureFate::kPermanent:
      return line + "not restarted" + (exit_code_policy ? "" : " under " + Policy(f.policy)) + ": the job fails";
    case FailureFate::kBackoffLimit:
      return line + "not restarted: the job has used its backoffLimit " + std::to_string(f.backoff_limit.value_or(0)) +
             " (" + Restarts(f.job_restarts) + " so far)";
    case FailureFate::kJobEnded: return line + "not restarted: the job has ended";
    case FailureFate::kKept:
      return line + "not restarted under " + Policy(f.policy) + "; the job goes on (enableDynamicWorker)";
  }
  return line;
}

std::string ExplainBackoffLimit(int32_t limit, const std::vector<std::pair<std::string, int>>& restarts,
                                const std::vector<std::string>& failing) {
  int total = 0;
  std::string who, failed;
  for (const auto& [replica, n] : restarts) {
    if (n == 0) continue;
    total += n;
    who += (who.empty() ? "" : ", ") + replica + " " + std::to_string(n);
  }
  for (const auto& r : failing) failed += (failed.empty() ? "" : ", ") + r;
  std::string line = "backoffLimit " + std::to_string(limit) + " is used up: " + Restarts(total) + " so far" +
                     (who.empty() ? "" : " (" + who + ")");
  if (!failing.empty())
    line += ", and the failure" + std::string(failing.size() > 1 ? "s of " : " of ") + failed + " would make " +
            std::to_string(total + static_cast<int>(failing.size()));
  line += ". The limit counts every replica's restarts together";
  if (restarts.size() > 1)
    line +=
        ": when one crash brings the others down (MultiWorkerMirrored's collectives), each replica that fails "
        "spends a restart";
  return line;
}

}  // namespace tfjob::local
