#pragma once
// The replica view shared by `tfjob run` (local processes) and `tfjob submit --wait` (pods of a
// cluster): the replica table, the live frame that keeps it at the top of a terminal while
// output scrolls below it, and the coloured "[worker-0] " prefixes of replica output, escaped.
// Pure string building: the callers write the strings.

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

namespace tfjob::local {

struct ReplicaRow {
  std::string name;   // "job-worker-0"
  std::string state;  // "Pending", "Running", "Succeeded", "Failed", "Stopped", ...
  int restarts = 0;
  int exit_code = -1;  // -1: none yet
  std::chrono::milliseconds run_time{0};
  // Optional last column (the cluster view: the node, or why the pod waits); the column is
  // shown only when a row has one.
  std::string detail;
};

// The table: a header row, then one row per replica, each without a newline.
std::vector<std::string> FormatReplicaTable(const std::vector<ReplicaRow>& rows, const std::string& detail_header = "");

// `tfjob run`'s columns beside a row (the cluster's view has none of them).
struct RunColumns {
  std::chrono::milliseconds total_run_time{0};  // every attempt's run time together
  std::string gpus;                             // the replica's devices ("0,1"; "" none)
  std::string note;                             // "next start in 8 s" (crash-loop back-off)
};
// `tfjob run`'s table: REPLICA, STATE (wide enough for CrashLoopBackOff), RESTARTS, EXIT CODE,
// RUN TIME (the current or last attempt), TOTAL TIME (all attempts), then GPUS when a replica
// has devices and the note last. `extra[i]` goes with `rows[i]`.
std::vector<std::string> FormatRunTable(const std::vector<ReplicaRow>& rows, const std::vector<RunColumns>& extra);

// The live table on a terminal of `terminal_rows` rows: rows 1..h hold the table, output scrolls
// in the region below it. LiveTableFits: the terminal is tall enough for it.
bool LiveTableFits(size_t replicas, int terminal_rows);
// Clears the screen, sets the scroll region below a table of `replicas` rows and puts the cursor there.
std::string LiveTableBegin(size_t replicas, int terminal_rows);
// Redraws the table at the top (saving and restoring the cursor).
std::string LiveTableFrame(const std::vector<std::string>& table);
// Gives the whole screen back and moves the cursor to its last row.
std::string LiveTableEnd(int terminal_rows);

// The colour (an SGR sequence) of a replica's prefix, the same for a name in every run.
const char* PrefixColor(const std::string& replica_name);
// "[prefix] line" (coloured when `color` is non-empty), without a newline.
std::string PrefixedLine(const std::string& prefix, const char* color, const std::string& line);
// One line of a replica's output (without its newline) as `tfjob run`, `tfjob logs` and
// `submit --follow` print it: a trailing '\r' (a CRLF line end) dropped, then every control
// character, DEL, byte that is not UTF-8 and invisible character escaped as Go's %q writes it
// (api::EscapeNonPrintable: ESC is `\x1b`), so that no replica can set the terminal's title,
// clear it, move the cursor or break the live table. Log files keep the bytes as written.
std::string ShownOutputLine(std::string_view line);

}  // namespace tfjob::local
