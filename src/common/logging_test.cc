#include "common/logging.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace tfjob {
namespace {

const auto kTime = std::chrono::system_clock::time_point(std::chrono::milliseconds(1767225600123LL));

TEST(Logging, TextIsLogfmtWithQuotedValuesWhenNeeded) {
  LogFields fields = {{"tfjob", "default/mnist"}, {"error", "connection refused: x"}};
  std::string line = FormatLogRecord({kTime, LogLevel::kWarning, "reconcile failed", &fields}, LogFormat::kText);
  EXPECT_EQ(line,
            "2026-01-01T00:00:00.123Z warning \"reconcile failed\" tfjob=default/mnist "
            "error=\"connection refused: x\"");
}

TEST(Logging, JsonHasTimeLevelMessageAndFields) {
  LogFields fields = {{"reconcile_id", "7"}};
  std::string line = FormatLogRecord({kTime, LogLevel::kInfo, "reconciled", &fields}, LogFormat::kJson);
  auto j = nlohmann::json::parse(line);
  EXPECT_EQ(j["ts"], "2026-01-01T00:00:00.123Z");
  EXPECT_EQ(j["level"], "info");
  EXPECT_EQ(j["msg"], "reconciled");
  EXPECT_EQ(j["reconcile_id"], "7");
}

TEST(Logging, ParseLogLevel) {
  LogLevel l = LogLevel::kInfo;
  EXPECT_TRUE(ParseLogLevel("debug", &l));
  EXPECT_EQ(l, LogLevel::kDebug);
  EXPECT_TRUE(ParseLogLevel("warn", &l));
  EXPECT_EQ(l, LogLevel::kWarning);
  EXPECT_FALSE(ParseLogLevel("loud", &l));
}

}  // namespace
}  // namespace tfjob
