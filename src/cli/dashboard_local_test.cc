#include "cli/dashboard_local.h"

#include <fcntl.h>
#include <unistd.h>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "testing/fake_clock.h"

namespace tfjob::cli::dashboard {
namespace {

using nlohmann::json;

// The feed written by a LocalFeed, read back and applied to a model as the dashboard's process
// does.
class FeedTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(pipe2(fds_, O_NONBLOCK), 0);
    feed_ = std::make_unique<LocalFeed>(fds_[1], clock_);
    job_.metadata.name = "mnist";
    api::ReplicaSpec spec;
    spec.replicas = 1;
    job_.spec.replica_specs["Worker"] = spec;
  }
  void TearDown() override { close(fds_[0]); }

  void Pass(const std::string& state, int restarts, int exit_code) {
    replicas_["mnist-worker-0"] = local::ReplicaOutcome{"mnist-worker-0", state, restarts, exit_code, {}, {}};
    feed_->Changed(job_, replicas_);
    char buf[65536];
    for (ssize_t n; (n = read(fds_[0], buf, sizeof buf)) > 0;) partial_.append(buf, static_cast<size_t>(n));
    size_t start = 0;
    for (size_t nl; (nl = partial_.find('\n', start)) != std::string::npos; start = nl + 1)
      ASSERT_TRUE(ApplyFeedLine(model_, "mnist", std::string_view(partial_).substr(start, nl - start)).ok());
    partial_.erase(0, start);
  }

  json Attempts() { return (*model_.Page(kLocalNamespace, "mnist"))["attempts"]; }

  FakeClock clock_;
  Model model_{clock_};
  int fds_[2];
  std::unique_ptr<LocalFeed> feed_;
  api::TfJob job_;
  std::map<std::string, local::ReplicaOutcome> replicas_;
  std::string partial_;
};

TEST_F(FeedTest, EachRestartIsAnAttemptWithItsOwnTimesAndExitCode) {
  Pass("Pending", 0, -1);
  clock_.Advance(std::chrono::seconds(1));
  Pass("Running", 0, -1);
  clock_.Advance(std::chrono::seconds(3));
  Pass("Failed", 0, 137);  // reaped
  Pass("Failed", 1, 137);  // deleted: the restart counted, the next one not started yet
  Pass("Failed", 1, 137);  // a pass before the next process starts: still the last exit
  clock_.Advance(std::chrono::seconds(1));
  Pass("Running", 1, 137);  // the next process runs (the last exit code is still the outcome's)
  clock_.Advance(std::chrono::seconds(2));
  Pass("Failed", 2, 1);  // reaped and deleted in one pass
  Pass("Failed", 2, 1);
  clock_.Advance(std::chrono::seconds(1));
  Pass("Running", 2, 1);
  json a = Attempts();
  ASSERT_EQ(a.size(), 3u) << a.dump();
  EXPECT_EQ(a[0]["outcome"], "failed");
  EXPECT_EQ(a[0]["exitCode"], 137);
  EXPECT_EQ(a[0]["start"], "2026-01-01T00:00:01Z");
  EXPECT_EQ(a[0]["end"], "2026-01-01T00:00:04Z");
  EXPECT_EQ(a[1]["outcome"], "failed");
  EXPECT_EQ(a[1]["exitCode"], 1);
  EXPECT_EQ(a[1]["start"], "2026-01-01T00:00:05Z");
  EXPECT_EQ(a[1]["end"], "2026-01-01T00:00:07Z");
  EXPECT_EQ(a[2]["outcome"], "running");
  EXPECT_EQ(a[2]["start"], "2026-01-01T00:00:08Z");
  EXPECT_EQ(a[2]["end"], nullptr);
  EXPECT_EQ(a[2]["node"], "localhost");
}

TEST_F(FeedTest, OutputIsPrefixedEscapedAndBounded) {
  Pass("Running", 0, -1);
  feed_->Output("worker-0", "<img src=x onerror=alert(1)>\x1b[2J");
  Pass("Running", 0, -1);
  json logs = model_.Logs(kLocalNamespace, "mnist", 0);
  ASSERT_EQ(logs["lines"].size(), 1u);
  EXPECT_EQ(logs["lines"][0], "[worker-0] <img src=x onerror=alert(1)>\\x1b[2J");
}

TEST(LocalFeedBound, LogLinesPastTheBufferAreDroppedNotTheState) {
  int fds[2];
  ASSERT_EQ(pipe2(fds, O_NONBLOCK), 0);
  FakeClock clock;
  LocalFeed feed(fds[1], clock, /*max_buffered=*/4096);
  // Nobody reads: the pipe fills, then the buffer.
  for (int i = 0; i < 100000; ++i) feed.Output("worker-0", std::string(100, 'x'));
  EXPECT_GT(feed.dropped_lines(), 0u);
  close(fds[0]);
}

TEST(ApplyFeedLine, RefusesJunk) {
  FakeClock clock;
  Model model(clock);
  EXPECT_FALSE(ApplyFeedLine(model, "j", "not json").ok());
  EXPECT_FALSE(ApplyFeedLine(model, "j", "[]").ok());
  EXPECT_FALSE(ApplyFeedLine(model, "j", R"({"k":"secrets","t":"ADDED","o":{}})").ok());
  EXPECT_TRUE(ApplyFeedLine(model, "j", R"({"log":"[worker-0] hi"})").ok());
  EXPECT_EQ(model.Logs(kLocalNamespace, "j", 0)["lines"].size(), 1u);
}

}  // namespace
}  // namespace tfjob::cli::dashboard
