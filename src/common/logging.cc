#include "common/logging.h"

#include <atomic>
#include <ctime>
#include <mutex>

#include <nlohmann/json.hpp>

#include "common/thread_annotations.h"
#include "common/time_format.h"

namespace tfjob {
namespace {

std::atomic<int> g_min_level{static_cast<int>(LogLevel::kInfo)};
std::atomic<int> g_format{static_cast<int>(LogFormat::kText)};
Mutex g_write_mu;  // held while writing to stderr so lines never interleave

std::string_view LevelName(LogLevel l) {
  switch (l) {
    case LogLevel::kDebug: return "debug";
    case LogLevel::kInfo: return "info";
    case LogLevel::kWarning: return "warning";
    case LogLevel::kError: return "error";
  }
  return "info";
}

std::string Timestamp(std::chrono::system_clock::time_point t) {
  return FormatRfc3339(t, 3);
}

// logfmt quoting: bare when the value has no space, quote or '='.
void AppendText(std::string& out, std::string_view v) {
  bool bare = !v.empty() && v.find_first_of(" \"=\t\n") == std::string_view::npos;
  if (bare) {
    out += v;
    return;
  }
  out += nlohmann::json(std::string(v)).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace

std::string FormatLogRecord(const LogRecord& record, LogFormat format) {
  if (format == LogFormat::kJson) {
    nlohmann::ordered_json j;
    j["ts"] = Timestamp(record.time);
    j["level"] = LevelName(record.level);
    j["msg"] = record.message;
    if (record.fields != nullptr)
      for (const auto& [k, v] : *record.fields) j[k] = v;
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::string out = Timestamp(record.time);
  out += ' ';
  out += LevelName(record.level);
  out += ' ';
  AppendText(out, record.message);
  if (record.fields != nullptr) {
    for (const auto& [k, v] : *record.fields) {
      out += ' ';
      out += k;
      out += '=';
      AppendText(out, v);
    }
  }
  return out;
}

bool ParseLogLevel(std::string_view text, LogLevel* level) {
  if (text == "debug")
    *level = LogLevel::kDebug;
  else if (text == "info")
    *level = LogLevel::kInfo;
  else if (text == "warning" || text == "warn")
    *level = LogLevel::kWarning;
  else if (text == "error")
    *level = LogLevel::kError;
  else
    return false;
  return true;
}

void SetLogOptions(LogLevel min_level, LogFormat format) {
  g_min_level = static_cast<int>(min_level);
  g_format = static_cast<int>(format);
}

Logger Logger::With(LogFields fields) const {
  Logger out = *this;
  for (auto& f : fields) out.base_.push_back(std::move(f));
  return out;
}

void Logger::Log(LogLevel level, std::string_view msg, const LogFields& fields) const {
  if (static_cast<int>(level) < g_min_level.load()) return;
  LogFields all = base_;
  all.insert(all.end(), fields.begin(), fields.end());
  LogRecord record{std::chrono::system_clock::now(), level, msg, &all};
  std::string line = FormatLogRecord(record, static_cast<LogFormat>(g_format.load()));
  line += '\n';
  MutexLock lock(g_write_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

std::string FormatDuration(std::chrono::nanoseconds d) {
  long long ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
  if (ms < 1000) return std::to_string(ms) + "ms";
  if (ms % 1000 == 0) return std::to_string(ms / 1000) + "s";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", static_cast<double>(ms) / 1000.0);
  return buf;
}

}  // namespace tfjob
