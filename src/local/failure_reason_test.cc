#include "local/failure_reason.h"

#include <gtest/gtest.h>

namespace tfjob::local {
namespace {

using api::RestartPolicy;

TEST(FailureReason, OneLinePerFailureSaysWhy) {
  struct Case {
    Failure f;
    std::string want;
  };
  const Case cases[] = {
      {{"j-worker-0", 1, RestartPolicy::kExitCode, FailureFate::kPermanent, 0, std::nullopt},
       "j-worker-0 failed with exit code 1: exit 1 is permanent under restartPolicy ExitCode (only 128 and above, a "
       "death by a signal, is restarted); not restarted: the job fails"},
      {{"j-worker-1", 137, RestartPolicy::kExitCode, FailureFate::kRestarted, 1, 3},
       "j-worker-1 failed with exit code 137: exit 137 is retryable under restartPolicy ExitCode (killed by signal 9); "
       "restarted (the job's restart 1 of backoffLimit 3)"},
      {{"j-worker-0", 2, RestartPolicy::kOnFailure, FailureFate::kRestarted, 4, std::nullopt},
       "j-worker-0 failed with exit code 2: restarted under restartPolicy OnFailure (the job's restart 4, no "
       "backoffLimit)"},
      {{"j-worker-0", 2, RestartPolicy::kNever, FailureFate::kPermanent, 0, std::nullopt},
       "j-worker-0 failed with exit code 2: not restarted under restartPolicy Never: the job fails"},
      {{"j-worker-2", 3, RestartPolicy::kOnFailure, FailureFate::kBackoffLimit, 2, 2},
       "j-worker-2 failed with exit code 3: not restarted: the job has used its backoffLimit 2 (2 restarts so far)"},
      {{"j-ps-0", 143, RestartPolicy::kAlways, FailureFate::kJobEnded, 0, std::nullopt},
       "j-ps-0 failed with exit code 143: not restarted: the job has ended"},
      {{"j-worker-3", 1, RestartPolicy::kNever, FailureFate::kKept, 0, std::nullopt},
       "j-worker-3 failed with exit code 1: not restarted under restartPolicy Never; the job goes on "
       "(enableDynamicWorker)"},
  };
  for (const auto& c : cases) EXPECT_EQ(ExplainFailure(c.f), c.want);
}

TEST(FailureReason, ExitCodeClasses) {
  EXPECT_EQ(
      ExitCodeClass(127),
      "exit 127 is permanent under restartPolicy ExitCode (only 128 and above, a death by a signal, is restarted)");
  EXPECT_EQ(ExitCodeClass(128), "exit 128 is retryable under restartPolicy ExitCode");
  EXPECT_EQ(ExitCodeClass(143), "exit 143 is retryable under restartPolicy ExitCode (killed by signal 15)");
  EXPECT_EQ(ExitCodeClass(255), "exit 255 is retryable under restartPolicy ExitCode");
}

TEST(FailureReason, ABackoffLimitNamesTheReplicasThatSpentIt) {
  // Issue 35: MWMS, backoffLimit 2: one crash of worker 1 brought the chief and worker 0 down
  // with it (3 restarts > 2).
  EXPECT_EQ(ExplainBackoffLimit(2, {{"j-chief-0", 0}, {"j-worker-0", 0}, {"j-worker-1", 0}},
                                {"j-chief-0", "j-worker-0", "j-worker-1"}),
            "backoffLimit 2 is used up: 0 restarts so far, and the failures of j-chief-0, j-worker-0, j-worker-1 "
            "would make 3. The limit counts every replica's restarts together: when one crash brings the others down "
            "(MultiWorkerMirrored's collectives), each replica that fails spends a restart");
  EXPECT_EQ(ExplainBackoffLimit(2, {{"j-worker-0", 1}, {"j-worker-1", 1}}, {"j-worker-0"}),
            "backoffLimit 2 is used up: 2 restarts so far (j-worker-0 1, j-worker-1 1), and the failure of j-worker-0 "
            "would make 3. The limit counts every replica's restarts together: when one crash brings the others down "
            "(MultiWorkerMirrored's collectives), each replica that fails spends a restart");
  EXPECT_EQ(ExplainBackoffLimit(0, {{"j-worker-0", 0}}, {"j-worker-0"}),
            "backoffLimit 0 is used up: 0 restarts so far, and the failure of j-worker-0 would make 1. The limit "
            "counts every replica's restarts together");
}

}  // namespace
}  // namespace tfjob::local
