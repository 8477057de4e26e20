#include "local/replica_view.h"

#include <algorithm>
#include <cstdio>
#include <functional>

#include "api/field_error.h"

namespace tfjob::local {
namespace {

const char* kColors[] = {"\033[36m", "\033[32m", "\033[33m", "\033[35m", "\033[34m", "\033[91m"};

}  // namespace

std::vector<std::string> FormatReplicaTable(const std::vector<ReplicaRow>& rows, const std::string& detail_header) {
  bool detail = false;
  for (const auto& r : rows) detail = detail || !r.detail.empty();
  std::vector<std::string> out;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-10s %8s %9s %10s", "REPLICA", "STATE", "RESTARTS", "EXIT CODE", "RUN TIME");
  out.emplace_back(line);
  if (detail) out.back() += "  " + (detail_header.empty() ? std::string("DETAIL") : detail_header);
  for (const auto& r : rows) {
    std::snprintf(line, sizeof line, "%-28s %-10s %8d %9s %9.1fs", r.name.c_str(), r.state.c_str(), r.restarts,
                  r.exit_code < 0 ? "-" : std::to_string(r.exit_code).c_str(),
                  std::chrono::duration<double>(r.run_time).count());
    out.emplace_back(line);
    if (detail && !r.detail.empty()) out.back() += "  " + r.detail;
  }
  return out;
}

std::vector<std::string> FormatRunTable(const std::vector<ReplicaRow>& rows, const std::vector<RunColumns>& extra) {
  size_t gpus = 0;
  for (const auto& e : extra) gpus = std::max(gpus, e.gpus.size());
  if (gpus > 0) gpus = std::max(gpus, std::string_view("GPUS").size());
  auto tail = [&](const std::string& g, const std::string& note) {
    std::string out;
    if (gpus > 0) out += "  " + g + std::string(gpus - std::min(gpus, g.size()), ' ');
    if (!note.empty()) out += "  " + note;
    while (!out.empty() && out.back() == ' ') out.pop_back();
    return out;
  };
  std::vector<std::string> out;
  char line[256];
  std::snprintf(line, sizeof line, "%-28s %-16s %8s %9s %10s %10s", "REPLICA", "STATE", "RESTARTS", "EXIT CODE",
                "RUN TIME", "TOTAL TIME");
  out.push_back(line + tail("GPUS", ""));
  for (size_t i = 0; i < rows.size(); ++i) {
    const ReplicaRow& r = rows[i];
    const RunColumns e = i < extra.size() ? extra[i] : RunColumns{};
    std::snprintf(line, sizeof line, "%-28s %-16s %8d %9s %9.1fs %9.1fs", r.name.c_str(), r.state.c_str(), r.restarts,
                  r.exit_code < 0 ? "-" : std::to_string(r.exit_code).c_str(),
                  std::chrono::duration<double>(r.run_time).count(),
                  std::chrono::duration<double>(e.total_run_time).count());
    out.push_back(line + tail(e.gpus.empty() ? "-" : e.gpus, e.note));
  }
  return out;
}

bool LiveTableFits(size_t replicas, int terminal_rows) {
  return terminal_rows > static_cast<int>(replicas) + 6;
}

std::string LiveTableBegin(size_t replicas, int terminal_rows) {
  int h = static_cast<int>(replicas) + 2;
  return "\033[2J\033[" + std::to_string(h + 1) + ";" + std::to_string(terminal_rows) + "r\033[" +
         std::to_string(h + 1) + ";1H";
}

std::string LiveTableFrame(const std::vector<std::string>& table) {
  std::string frame = "\0337\033[H";  // save the cursor, go to the top
  for (const auto& r : table) frame += "\033[1m" + r + "\033[0m\033[K\n";
  frame += "\033[K\0338";  // blank separator, restore the cursor
  return frame;
}

std::string LiveTableEnd(int terminal_rows) {
  return "\033[r\033[" + std::to_string(terminal_rows) + ";1H\n";
}

const char* PrefixColor(const std::string& replica_name) {
  return kColors[std::hash<std::string>{}(replica_name) % (sizeof kColors / sizeof kColors[0])];
}

std::string PrefixedLine(const std::string& prefix, const char* color, const std::string& line) {
  if (color != nullptr && color[0] != '\0') return std::string(color) + "[" + prefix + "]\033[0m " + line;
  return "[" + prefix + "] " + line;
}

std::string ShownOutputLine(std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return api::EscapeNonPrintable(line);
}

}  // namespace tfjob::local
