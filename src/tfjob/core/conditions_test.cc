#include "tfjob/core/conditions.h"

#include <functional>
#include <vector>

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

const api::Time kT0 = api::Time(std::chrono::seconds(1767225600));

// Cases CO1-CO5 of docs/semantics.md 4.12, in sequence.
TEST(SetCondition, SpecSequenceCO1ToCO5) {
  api::JobStatus st;
  EXPECT_TRUE(SetCondition(st, "Created", "True", "TFJobCreated", "created", kT0));
  ASSERT_EQ(st.conditions.size(), 1u);
  EXPECT_EQ(st.conditions[0].type, "Created");  // CO1

  EXPECT_TRUE(SetCondition(st, "Running", "True", "TFJobRunning", "running", kT0));
  ASSERT_EQ(st.conditions.size(), 2u);
  EXPECT_EQ(st.conditions[1].type, "Running");  // CO2

  EXPECT_TRUE(SetCondition(st, "Restarting", "True", "TFJobRestarting", "restarting", kT0));
  ASSERT_EQ(st.conditions.size(), 2u);
  EXPECT_EQ(st.conditions[1].type, "Restarting");  // CO3: Running removed

  EXPECT_TRUE(SetCondition(st, "Running", "True", "TFJobRunning", "running", kT0));
  ASSERT_EQ(st.conditions.size(), 2u);
  EXPECT_EQ(st.conditions[1].type, "Running");  // CO4: Restarting removed

  EXPECT_TRUE(SetCondition(st, "Failed", "True", "TFJobFailed", "failed", kT0));
  ASSERT_EQ(st.conditions.size(), 3u);
  EXPECT_EQ(st.conditions[1].type, "Running");
  EXPECT_EQ(st.conditions[1].status, "False");  // CO5
  EXPECT_EQ(st.conditions[2].type, "Failed");
}

TEST(SetCondition, FailedIsTerminalAndSameReasonIsANoOp) {
  api::JobStatus st;
  SetCondition(st, "Failed", "True", "TFJobFailed", "failed", kT0);
  EXPECT_FALSE(SetCondition(st, "Running", "True", "TFJobRunning", "running", kT0 + std::chrono::seconds(1)));
  EXPECT_EQ(st.conditions.size(), 1u);

  api::JobStatus r;
  SetCondition(r, "Running", "True", "TFJobRunning", "one", kT0);
  EXPECT_FALSE(SetCondition(r, "Running", "True", "TFJobRunning", "two", kT0 + std::chrono::seconds(5)));
  EXPECT_EQ(r.conditions[0].message, "one");
}

TEST(SetCondition, SameStatusNewReasonKeepsTransitionTime) {
  api::JobStatus st;
  SetCondition(st, "Suspended", "True", "TFJobSuspended", "s", kT0);
  SetCondition(st, "Suspended", "True", "Other", "o", kT0 + std::chrono::seconds(9));
  EXPECT_EQ(st.conditions[0].last_transition_time, kT0);
  EXPECT_EQ(st.conditions[0].last_update_time, kT0 + std::chrono::seconds(9));
}

TEST(IsFinished, CO6) {
  api::JobStatus s, f, p;
  SetCondition(s, "Succeeded", "True", "TFJobSucceeded", "", kT0);
  SetCondition(f, "Failed", "True", "TFJobFailed", "", kT0);
  SetCondition(p, "Suspended", "True", "TFJobSuspended", "", kT0);
  EXPECT_TRUE(IsFinished(s));
  EXPECT_TRUE(IsFinished(f));
  EXPECT_FALSE(IsFinished(p));
}

TEST(IsJobSuspended, SU5) {
  api::TfJob job = testing::NewTfJob(1, 0);
  EXPECT_FALSE(IsJobSuspended(job));
  job.spec.run_policy.suspend = false;
  EXPECT_FALSE(IsJobSuspended(job));
  job.spec.run_policy.suspend = true;
  EXPECT_TRUE(IsJobSuspended(job));
}

TEST(OnlyActiveCountsDiffer, Table) {
  api::JobStatus base;
  SetCondition(base, "Created", "True", "TFJobCreated", "", kT0);
  base.replica_statuses["Worker"].active = 1;
  base.start_time = kT0;
  struct Case {
    const char* name;
    std::function<void(api::JobStatus&)> change;
    bool only_active;
  };
  const std::vector<Case> cases = {
      {"the same status", [](api::JobStatus&) {}, false},
      {"active up", [](api::JobStatus& s) { s.replica_statuses["Worker"].active = 4; }, true},
      {"active down to 0", [](api::JobStatus& s) { s.replica_statuses["Worker"].active = 0; }, true},
      {"succeeded", [](api::JobStatus& s) { s.replica_statuses["Worker"].succeeded = 1; }, false},
      {"failed", [](api::JobStatus& s) { s.replica_statuses["Worker"].failed = 1; }, false},
      {"restarts", [](api::JobStatus& s) { s.replica_statuses["Worker"].restarts = 1; }, false},
      {"disruptions", [](api::JobStatus& s) { s.replica_statuses["Worker"].disruptions = 1; }, false},
      {"a new replica type", [](api::JobStatus& s) { s.replica_statuses["PS"].active = 1; }, false},
      {"a condition", [](api::JobStatus& s) { SetCondition(s, "Running", "True", "TFJobRunning", "", kT0); }, false},
      {"completionTime", [](api::JobStatus& s) { s.completion_time = kT0; }, false},
      {"startTime", [](api::JobStatus& s) { s.start_time.reset(); }, false},
      {"active and a condition",
       [](api::JobStatus& s) {
         s.replica_statuses["Worker"].active = 2;
         SetCondition(s, "Running", "True", "TFJobRunning", "", kT0);
       },
       false},
  };
  for (const auto& c : cases) {
    api::JobStatus next = base;
    c.change(next);
    EXPECT_EQ(OnlyActiveCountsDiffer(base, next), c.only_active) << c.name;
  }
}

}  // namespace
}  // namespace tfjob::core
