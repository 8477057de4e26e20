#include "local/replica_view.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace tfjob::local {
namespace {

using std::chrono::milliseconds;

TEST(ReplicaView, RunTableHasTheTotalTimeTheDevicesAndTheBackOff) {
  std::vector<ReplicaRow> rows = {{"job-worker-0", "CrashLoopBackOff", 2, 2, milliseconds(100), ""},
                                  {"job-worker-1", "Running", 0, -1, milliseconds(12300), ""}};
  std::vector<RunColumns> extra = {{milliseconds(300), "0", "next start in 8 s"}, {milliseconds(12300), "1,2", ""}};
  EXPECT_THAT(FormatRunTable(rows, extra),
              ::testing::ElementsAre(
                  "REPLICA                      STATE            RESTARTS EXIT CODE   RUN TIME TOTAL TIME  GPUS",
                  "job-worker-0                 CrashLoopBackOff        2         2       0.1s       0.3s  0     next "
                  "start in 8 s",
                  "job-worker-1                 Running                 0         -      12.3s      12.3s  1,2"));
}

TEST(ReplicaView, RunTableWithoutDevicesHasNoGpuColumn) {
  std::vector<ReplicaRow> rows = {{"job-chief-0", "Succeeded", 0, 0, milliseconds(1000), ""}};
  EXPECT_THAT(
      FormatRunTable(rows, {{milliseconds(1000), "", ""}}),
      ::testing::ElementsAre("REPLICA                      STATE            RESTARTS EXIT CODE   RUN TIME TOTAL TIME",
                             "job-chief-0                  Succeeded               0         0       1.0s       1.0s"));
}

}  // namespace
}  // namespace tfjob::local
