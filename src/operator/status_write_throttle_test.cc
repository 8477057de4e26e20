#include "operator/status_write_throttle.h"

#include <gtest/gtest.h>

#include "testing/fake_clock.h"
#include "tfjob/core/conditions.h"

namespace tfjob::operator_ {
namespace {

using std::chrono::milliseconds;

api::TfJob RunningJob(int32_t active) {
  api::TfJob job;
  job.metadata.ns = "default";
  job.metadata.name = "j";
  core::SetCondition(job.status, "Created", "True", "TFJobCreated", "", api::Time{});
  job.status.replica_statuses["Worker"].active = active;
  return job;
}

core::Plan WithStatus(const api::JobStatus& status) {
  core::Plan plan;
  plan.status = status;
  return plan;
}

// D30 over time: the first write goes, a count-only change within the interval waits for what
// is left of it, one after the interval goes, another change goes at once; Forget starts over.
TEST(StatusWriteThrottle, HoldsCountOnlyChangesWithinTheInterval) {
  FakeClock clock;
  StatusWriteThrottle throttle(clock, milliseconds(1000));
  const api::TfJob job = RunningJob(1);
  api::JobStatus more = job.status;
  more.replica_statuses["Worker"].active = 2;

  core::Plan first = WithStatus(more);
  throttle.Apply("default/j", job, first);
  EXPECT_TRUE(first.status) << "nothing written yet: written now";

  clock.Advance(milliseconds(300));
  core::Plan held = WithStatus(more);
  throttle.Apply("default/j", job, held);
  EXPECT_FALSE(held.status);
  EXPECT_EQ(held.requeue_after, milliseconds(700));

  api::JobStatus running = more;
  core::SetCondition(running, "Running", "True", "TFJobRunning", "", api::Time{});
  core::Plan other = WithStatus(running);
  throttle.Apply("default/j", job, other);
  EXPECT_TRUE(other.status) << "a condition is written at once";

  clock.Advance(milliseconds(400));
  core::Plan again = WithStatus(more);
  throttle.Apply("default/j", job, again);
  EXPECT_FALSE(again.status) << "the condition's write started a new interval";
  EXPECT_EQ(again.requeue_after, milliseconds(600));

  throttle.Forget("default/j");
  core::Plan forgotten = WithStatus(more);
  throttle.Apply("default/j", job, forgotten);
  EXPECT_TRUE(forgotten.status) << "a forgotten job has no last write";

  clock.Advance(milliseconds(1000));
  core::Plan later = WithStatus(more);
  throttle.Apply("default/j", job, later);
  EXPECT_TRUE(later.status) << "the interval has passed";
}

TEST(StatusWriteThrottle, ZeroIntervalNeverHolds) {
  FakeClock clock;
  StatusWriteThrottle throttle(clock, milliseconds(0));
  const api::TfJob job = RunningJob(1);
  api::JobStatus more = job.status;
  more.replica_statuses["Worker"].active = 2;
  for (int i = 0; i < 3; ++i) {
    core::Plan plan = WithStatus(more);
    throttle.Apply("default/j", job, plan);
    EXPECT_TRUE(plan.status) << i;
  }
}

}  // namespace
}  // namespace tfjob::operator_
