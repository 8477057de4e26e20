#include "operator/job_latency.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::operator_ {
namespace {

using api::PodPhase;
using testing::MakePod;
using namespace std::chrono_literals;

const std::string kKey = "default/test-tfjob";
const api::Time kCreated{std::chrono::seconds(1767225600)};

api::TfJob Job(std::string uid = "test-uid") {
  api::TfJob job = testing::NewTfJob(/*workers=*/2, /*ps=*/0);
  job.metadata.uid = std::move(uid);
  job.metadata.creation_timestamp = kCreated;
  return job;
}

std::vector<api::Pod> Pods(PodPhase phase, int n, std::string owner = "test-uid") {
  std::vector<api::Pod> pods;
  for (int i = 0; i < n; ++i) pods.push_back(MakePod("test-tfjob", "worker", i, phase, owner));
  return pods;
}

struct Histograms {
  controller::Registry registry;
  JobLatency latency{registry};
  controller::Histogram& created = registry.AddHistogram("tfjob_job_pods_created_seconds", "", {}, {}).With({});
  controller::Histogram& running = registry.AddHistogram("tfjob_job_pods_running_seconds", "", {}, {}).With({});
};

// D12 as a table: which passes observe which milestone, once per job.
TEST(JobLatency, EachMilestoneOnceAtTheJobsAge) {
  struct Pass {
    std::vector<api::Pod> pods;
    size_t created_now;
    std::chrono::seconds at;  // after the job's creation
  };
  struct Case {
    const char* name;
    std::vector<Pass> passes;
    uint64_t created, running;
    double created_sum, running_sum;
  };
  const std::vector<Case> cases = {
      {"a pass creating every pod counts created at its time", {{{}, 2, 3s}}, 1, 0, 3, 0},
      {"some created is not all", {{{}, 1, 3s}}, 0, 0, 0, 0},
      {"cached and creating together", {{Pods(PodPhase::kPending, 1), 1, 4s}}, 1, 0, 4, 0},
      {"all running at a later pass",
       {{{}, 2, 1s}, {Pods(PodPhase::kPending, 2), 0, 2s}, {Pods(PodPhase::kRunning, 2), 0, 7s}},
       1,
       1,
       1,
       7},
      {"observed once however many passes see it",
       {{Pods(PodPhase::kRunning, 2), 0, 5s}, {Pods(PodPhase::kRunning, 2), 0, 9s}},
       1,
       1,
       5,
       5},
      {"another job's pods do not count", {{Pods(PodPhase::kRunning, 2, "other-uid"), 0, 5s}}, 0, 0, 0, 0},
  };
  for (const auto& c : cases) {
    Histograms h;
    for (const auto& p : c.passes) h.latency.Observe(kKey, Job(), p.pods, p.created_now, kCreated + p.at);
    EXPECT_EQ(h.created.count(), c.created) << c.name;
    EXPECT_EQ(h.running.count(), c.running) << c.name;
    EXPECT_DOUBLE_EQ(h.created.sum(), c.created_sum) << c.name;
    EXPECT_DOUBLE_EQ(h.running.sum(), c.running_sum) << c.name;
  }
}

TEST(JobLatency, AJobRecreatedUnderItsKeyIsObservedAgain) {
  Histograms h;
  h.latency.Observe(kKey, Job("uid-1"), Pods(PodPhase::kRunning, 2, "uid-1"), 0, kCreated + 2s);
  h.latency.Observe(kKey, Job("uid-2"), Pods(PodPhase::kRunning, 2, "uid-2"), 0, kCreated + 3s);
  EXPECT_EQ(h.running.count(), 2u);
}

TEST(JobLatency, ForgetDropsTheJob) {
  Histograms h;
  h.latency.Observe(kKey, Job(), {}, 2, kCreated + 1s);
  EXPECT_EQ(h.latency.remembered(), 1u);
  h.latency.Forget(kKey);
  EXPECT_EQ(h.latency.remembered(), 0u);
}

}  // namespace
}  // namespace tfjob::operator_
