#include "tfjob/core/replica_pods.h"

#include <gtest/gtest.h>

#include "testing/fixtures.h"

namespace tfjob::core {
namespace {

using api::PodPhase;
using testing::MakePod;

std::vector<const api::Pod*> Ptrs(const std::vector<api::Pod>& pods) {
  std::vector<const api::Pod*> out;
  for (const auto& p : pods) out.push_back(&p);
  return out;
}

TEST(CountPod, RS1) {
  std::vector<api::Pod> pods;
  for (int i = 0; i < 2; ++i) pods.push_back(MakePod("j", "worker", i, PodPhase::kFailed));
  for (int i = 2; i < 5; ++i) pods.push_back(MakePod("j", "worker", i, PodPhase::kSucceeded));
  pods.push_back(MakePod("j", "worker", 5, PodPhase::kRunning));
  pods.push_back(MakePod("j", "worker", 6, PodPhase::kRunning));
  pods.back().meta.deletion_timestamp = api::Time(std::chrono::seconds(1));
  api::ReplicaStatus st;
  for (const auto& p : pods) CountPod(p, &st);
  EXPECT_EQ(st.failed, 3);
  EXPECT_EQ(st.succeeded, 3);
  EXPECT_EQ(st.active, 1);
}

TEST(CalculatePodSliceSize, SL1AndSL2) {
  std::vector<api::Pod> three;
  for (int i = 0; i < 3; ++i) three.push_back(MakePod("j", "worker", i, PodPhase::kRunning));
  EXPECT_EQ(CalculatePodSliceSize(Ptrs(three), 3), 3);
  EXPECT_EQ(CalculatePodSliceSize(Ptrs(three), 4), 4);
  EXPECT_EQ(CalculatePodSliceSize(Ptrs(three), 2), 3);
  auto four = three;
  four.push_back(MakePod("j", "worker", 4, PodPhase::kRunning));
  EXPECT_EQ(CalculatePodSliceSize(Ptrs(four), 3), 5);
  auto slices = SlicePodsByIndex(Ptrs(four), 3);
  ASSERT_EQ(slices.size(), 5u);
  EXPECT_TRUE(slices[3].empty());
  EXPECT_EQ(slices[4].size(), 1u);
}

TEST(FilterPodsForReplicaType, FL1) {
  // Upstream's case has the labels "foo" and "bar"; replica-type labels are parsed now (only
  // those of a replica type are kept), so two real ones stand in for them.
  std::vector<api::Pod> pods = {
      MakePod("j", "ps", 0, PodPhase::kRunning), MakePod("j", "worker", 0, PodPhase::kRunning),
      MakePod("j", "ps", 1, PodPhase::kRunning), MakePod("j", "worker", 1, PodPhase::kRunning),
      MakePod("j", "ps", 2, PodPhase::kRunning)};
  auto foo = FilterPodsForReplicaType(Ptrs(pods), api::ReplicaType::kPS);
  ASSERT_EQ(foo.size(), 3u);
  EXPECT_EQ(foo[0], &pods[0]);
  EXPECT_EQ(foo[1], &pods[2]);
  EXPECT_EQ(foo[2], &pods[4]);
}

TEST(IsRetryableExitCode, E1AndE2) {
  for (int code : {1, 2, 3}) EXPECT_FALSE(IsRetryableExitCode(code)) << code;
  for (int code : {130, 138, kExitCodeUnknown}) EXPECT_TRUE(IsRetryableExitCode(code)) << code;
}

// Cases K1-K6 of docs/semantics.md 4.6: worker pods created succeeded -> failed -> running.
TEST(IsWorker0Completed, SpecCases) {
  struct Case {
    const char* id;
    api::TfJob job;
    int failed, succeeded, running;
    bool expected;
  };
  auto master_only = testing::DefaultedJobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: test-tfjob}\nspec:\n  tfReplicaSpecs:\n"
      "    Master: {template: {spec: {containers: [{name: tensorflow, image: x}]}}}\n");
  auto chief_only = testing::DefaultedJobFromYaml(
      "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: test-tfjob}\nspec:\n  tfReplicaSpecs:\n"
      "    Chief: {template: {spec: {containers: [{name: tensorflow, image: x}]}}}\n");
  std::vector<Case> cases = {
      {"K1", testing::NewTfJob(1, 1), 0, 0, 1, false},
      {"K2", testing::NewTfJob(1, 0), 0, 1, 0, true},
      {"K3", master_only, 0, 0, 0, true},
      {"K4", chief_only, 0, 0, 0, true},
      {"K5", testing::NewTfJob(2, 0), 1, 1, 0, true},
      {"K6", testing::NewTfJob(2, 0), 1, 0, 1, false},
  };
  for (const auto& c : cases) {
    std::vector<api::Pod> pods;
    int index = 0;
    for (int i = 0; i < c.succeeded; ++i) {
      pods.push_back(MakePod("test-tfjob", "worker", index++, PodPhase::kSucceeded));
      testing::WithExitCode(pods.back(), 0);
    }
    for (int i = 0; i < c.failed; ++i) pods.push_back(MakePod("test-tfjob", "worker", index++, PodPhase::kFailed));
    for (int i = 0; i < c.running; ++i) pods.push_back(MakePod("test-tfjob", "worker", index++, PodPhase::kRunning));
    EXPECT_EQ(IsWorker0Completed(c.job, Ptrs(pods)), c.expected) << c.id;
  }
}

TEST(IsWorker0Completed, SucceededWithoutExitStatusDoesNotCount) {
  std::vector<api::Pod> pods = {MakePod("test-tfjob", "worker", 0, PodPhase::kSucceeded)};
  EXPECT_FALSE(IsWorker0Completed(testing::NewTfJob(1, 0), Ptrs(pods)));
}

}  // namespace
}  // namespace tfjob::core
