#pragma once
// Structured logging facade: one line per record on stderr, as logfmt-style text or as JSON.
// Call sites pass a message and key/value fields; there is no stream-style LOG() <<.
// Like controller-runtime's logr, a Logger carries fields (controller, key, reconcile_id)
// that With() adds to. The pure core never logs (style.md section 5).

#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace tfjob {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarning = 2, kError = 3 };
enum class LogFormat { kText, kJson };

using LogFields = std::vector<std::pair<std::string, std::string>>;

struct LogRecord {
  std::chrono::system_clock::time_point time;
  LogLevel level = LogLevel::kInfo;
  std::string_view message;
  const LogFields* fields = nullptr;
};

// Renders one record without the trailing newline. Pure; used by the sink and by tests.
std::string FormatLogRecord(const LogRecord& record, LogFormat format);

// Parses "debug|info|warning|warn|error"; returns false on anything else.
bool ParseLogLevel(std::string_view text, LogLevel* level);

// A duration for a log field: "850ms", "7.2s", "30s".
std::string FormatDuration(std::chrono::nanoseconds d);

// Process-wide output settings. Thread-safe.
void SetLogOptions(LogLevel min_level, LogFormat format);

class Logger {
 public:
  Logger() = default;
  // A copy of this logger with `fields` appended to every record.
  Logger With(LogFields fields) const;

  void Debug(std::string_view msg, const LogFields& fields = {}) const { Log(LogLevel::kDebug, msg, fields); }
  void Info(std::string_view msg, const LogFields& fields = {}) const { Log(LogLevel::kInfo, msg, fields); }
  void Warning(std::string_view msg, const LogFields& fields = {}) const { Log(LogLevel::kWarning, msg, fields); }
  void Error(std::string_view msg, const LogFields& fields = {}) const { Log(LogLevel::kError, msg, fields); }
  void Log(LogLevel level, std::string_view msg, const LogFields& fields) const;

 private:
  LogFields base_;
};

}  // namespace tfjob
