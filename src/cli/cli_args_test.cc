#include "cli/cli_args.h"

#include <gtest/gtest.h>

namespace tfjob::cli {
namespace {

using std::chrono::milliseconds;

TEST(CliDuration, GoDurationsAndPlainSeconds) {
  EXPECT_EQ(*ParseDuration("90s"), milliseconds(90000));
  EXPECT_EQ(*ParseDuration("5m"), milliseconds(300000));
  EXPECT_EQ(*ParseDuration("1h30m"), milliseconds(5400000));
  EXPECT_EQ(*ParseDuration("1.5h"), milliseconds(5400000));
  EXPECT_EQ(*ParseDuration("250ms"), milliseconds(250));
  EXPECT_EQ(*ParseDuration("30"), milliseconds(30000));
  EXPECT_EQ(*ParseDuration("0"), milliseconds(0));
  for (const char* bad : {"", "-5s", "5x", "s", "1..2s", "5m3", "1e9h", "9999999999999h", " 5s"})
    EXPECT_FALSE(ParseDuration(bad).ok()) << bad;
}

// The operator's duration flags (--kube-api-timeout, --status-count-interval) are seconds.
TEST(CliDuration, SecondsFlagsToTheMillisecond) {
  EXPECT_EQ(SecondsFlag(30), milliseconds(30000));
  EXPECT_EQ(SecondsFlag(0), milliseconds(0));
  EXPECT_EQ(SecondsFlag(0.1), milliseconds(100));
  EXPECT_EQ(SecondsFlag(1.5), milliseconds(1500));
  EXPECT_EQ(SecondsFlag(0.0004), milliseconds(0));
  EXPECT_EQ(SecondsFlag(3600), milliseconds(3600000));
}

TEST(CliArgs, ConnectionFlagsOfEveryCommand) {
  auto a = ParseCliArgs({"get", "--kubeconfig", "/k", "--context", "c", "-n", "ns", "job", "-o", "wide"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->command, "get");
  EXPECT_EQ(a->conn.kubeconfig, "/k");
  EXPECT_EQ(a->conn.context, "c");
  EXPECT_EQ(a->conn.ns, "ns");
  EXPECT_EQ(a->name, "job");
  EXPECT_EQ(a->output, "wide");
  a = ParseCliArgs({"get", "-A", "--watch"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->conn.all_namespaces);
  EXPECT_TRUE(a->watch);
}

TEST(CliArgs, MaxLogRequests) {
  auto a = ParseCliArgs({"logs", "j", "-f"});
  ASSERT_TRUE(a.ok());
  EXPECT_EQ(a->max_log_requests, 5);  // kubectl's default
  a = ParseCliArgs({"logs", "j", "-f", "--max-log-requests", "12"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->max_log_requests, 12);
  a = ParseCliArgs({"submit", "f.yaml", "--follow", "--max-log-requests", "8"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->max_log_requests, 8);
  for (const char* bad : {"0", "-1", "x", "1001"})
    EXPECT_FALSE(ParseCliArgs({"logs", "j", "-f", "--max-log-requests", bad}).ok()) << bad;
  EXPECT_FALSE(ParseCliArgs({"get", "--max-log-requests", "3"}).ok());
}

TEST(CliArgs, UsageErrors) {
  EXPECT_FALSE(ParseCliArgs({"get", "-A", "-n", "x"}).ok());
  EXPECT_FALSE(ParseCliArgs({"get", "-A", "name"}).ok());
  EXPECT_FALSE(ParseCliArgs({"get", "-o", "xml"}).ok());
  EXPECT_FALSE(ParseCliArgs({"get", "-o", "yaml", "--watch"}).ok());
  EXPECT_FALSE(ParseCliArgs({"describe"}).ok());
  EXPECT_FALSE(ParseCliArgs({"describe", "-A", "x"}).ok());  // -A is get's only
  EXPECT_FALSE(ParseCliArgs({"submit"}).ok());
  EXPECT_FALSE(ParseCliArgs({"submit", "f.yaml", "--timeout", "5m"}).ok());  // needs --wait
  EXPECT_FALSE(ParseCliArgs({"submit", "f.yaml", "--wait", "--timeout", "soon"}).ok());
  EXPECT_FALSE(ParseCliArgs({"submit", "f.yaml", "--delete-on-interrupt"}).ok());
  EXPECT_FALSE(ParseCliArgs({"logs", "j", "--replica", "worker-0", "--type", "Worker"}).ok());
  EXPECT_FALSE(ParseCliArgs({"logs", "j", "-f", "--previous"}).ok());
  EXPECT_FALSE(ParseCliArgs({"suspend", "a", "b"}).ok());
  EXPECT_FALSE(ParseCliArgs({"run", "x"}).ok());  // not a cluster command
}

TEST(CliArgs, SubmitWaitFollowTimeout) {
  auto a = ParseCliArgs({"submit", "job.yaml", "--follow", "--timeout", "2m", "--delete-on-interrupt"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->file, "job.yaml");
  EXPECT_TRUE(a->wait);  // --follow implies --wait
  EXPECT_TRUE(a->follow);
  EXPECT_EQ(*a->timeout, milliseconds(120000));
  EXPECT_TRUE(a->delete_on_interrupt);
}

TEST(CliArgs, LogsAndDelete) {
  auto a = ParseCliArgs({"logs", "j", "--type", "Worker", "-p", "--since", "90s"});
  ASSERT_TRUE(a.ok()) << a.status().message();
  EXPECT_EQ(a->type, "Worker");
  EXPECT_TRUE(a->previous);
  EXPECT_EQ(a->since->count(), 90);
  a = ParseCliArgs({"delete", "j", "--wait", "--timeout", "10s"});
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->wait);
  EXPECT_EQ(*a->timeout, milliseconds(10000));
}

TEST(CliArgs, HelpNamesThePluginForm) {
  auto a = ParseCliArgs({"get", "--help"}, "kubectl tfjob");
  ASSERT_TRUE(a.ok());
  EXPECT_TRUE(a->help);
  EXPECT_NE(a->help_text.find("kubectl tfjob get"), std::string::npos) << a->help_text;
}

}  // namespace
}  // namespace tfjob::cli
