#include "controller/metrics.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::controller {
namespace {

TEST(Registry, ExposesCountersGaugesAndHistogramsInTextFormat) {
  Registry r;
  auto& created = r.AddCounter("training_operator_jobs_created_total", "Counts number of jobs created",
                               {"job_namespace", "framework"});
  created.With({"default", "tensorflow"}).Inc();
  created.With({"default", "tensorflow"}).Inc(2);
  r.AddGauge("leader_election_master_status", "Leader status", {"name"}).With({"tfjob-operator"}).Set(1);
  auto& h = r.AddHistogram("d_seconds", "A duration", {}, {0.1, 1}).With({});
  h.Observe(0.05);
  h.Observe(0.5);
  h.Observe(5);
  EXPECT_EQ(
      r.Expose(),
      "# HELP d_seconds A duration\n# TYPE d_seconds histogram\n"
      "d_seconds_bucket{le=\"0.10000000000000001\"} 1\nd_seconds_bucket{le=\"1\"} 2\nd_seconds_bucket{le=\"+Inf\"} 3\n"
      "d_seconds_sum 5.5499999999999998\nd_seconds_count 3\n"
      "# HELP leader_election_master_status Leader status\n# TYPE leader_election_master_status gauge\n"
      "leader_election_master_status{name=\"tfjob-operator\"} 1\n"
      "# HELP training_operator_jobs_created_total Counts number of jobs created\n"
      "# TYPE training_operator_jobs_created_total counter\n"
      "training_operator_jobs_created_total{job_namespace=\"default\",framework=\"tensorflow\"} 3\n");
}

TEST(Registry, SameNameReturnsTheSameFamilyAndLabelsAreEscaped) {
  Registry r;
  r.AddCounter("c", "h", {"l"}).With({"a\"b\\c\nd"}).Inc();
  r.AddCounter("c", "h", {"l"}).With({"a\"b\\c\nd"}).Inc();
  EXPECT_THAT(r.Expose(), ::testing::HasSubstr("c{l=\"a\\\"b\\\\c\\nd\"} 2\n"));
}

}  // namespace
}  // namespace tfjob::controller
