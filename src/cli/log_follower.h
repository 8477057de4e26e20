#pragma once
// `tfjob logs -f` and `submit --follow`: the followed logs of a TFJob's containers.
//
// LogCursor turns one container's log, read with `timestamps=true` over one or more connections,
// into the lines to print, each at most once: a connection that breaks is resumed with
// `sinceTime` (whole seconds, as the API server passes it on), and the lines the server sends
// again (those of the last printed line's second, up to it) are recognised by their timestamps
// and skipped. State: the last printed line's timestamp and how many lines had it, plus at most
// one partial line (kMaxLogLine): constant memory per container.
//
// LogFollower streams every container of the job's pods with at most `max_requests` log
// requests open at once (`--max-log-requests`, default 5 as kubectl's). One thread per followed
// container; a container restarted in place is followed on by the same cursor, so a new
// instance's lines come after the old one's and nothing is printed twice. When the pods have
// more containers to follow at once than `max_requests`, Update refuses (as kubectl does) and
// starts none of the new ones; the caller stops. State is kept only for the containers of the
// pods of the last Update (and streams still draining): bounded by the job's size. With
// `queue_excess` (submit --follow) the excess containers wait for a slot instead.

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stop_token>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "api/time.h"
#include "cli/job_view.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "kube/rest_client.h"

namespace tfjob::cli {

// A streamed log line longer than this is printed in pieces.
inline constexpr size_t kMaxLogLine = 64 * 1024;
// kubectl's default of --max-log-requests.
inline constexpr int kDefaultMaxLogRequests = 5;

class LogCursor {
 public:
  // Receives the text of a line to print (timestamp removed), or a piece of a long one.
  using Print = std::function<void(std::string_view)>;

  // A new connection starts: what it sends before the first new line is skipped.
  void BeginConnection();
  // Bytes of the current connection (timestamps=true: "2026-01-01T00:00:00.123456789Z text\n").
  // A line without a timestamp (a server that ignores timestamps=true) is printed as it is.
  void Feed(std::string_view bytes, const Print& print);
  // The connection ended: `complete` (the server ended the body) prints a last line without a
  // newline; otherwise it is dropped, as the next connection sends it again whole.
  void EndConnection(bool complete, const Print& print);
  // The `sinceTime` of the next connection: the second of the last printed line; nullopt before
  // any timestamped line was printed.
  std::optional<api::Time> ResumeTime() const;

 private:
  void Piece(std::string_view text, bool ends_line, const Print& print);
  // Decides on a line's start (its timestamp), removing the timestamp from `text`.
  bool Admit(std::string_view& text);

  std::string partial_;
  bool in_line_ = false;           // pieces of a long line were handled, not yet its end
  bool printing_ = false;          // the current line is printed (not a resent one)
  bool caught_up_ = true;          // past the resent lines of this connection
  std::optional<api::Time> last_;  // the last printed line's timestamp
  int printed_at_last_ = 0;        // lines printed with that timestamp
  int resent_at_last_ = 0;         // lines with it seen again in this connection
};

struct LogFollowOptions {
  int max_requests = kDefaultMaxLogRequests;  // log streams open at once
  std::string first_query;                    // "&sinceSeconds=N" for the first connection
  bool color = false;
  // Before reconnecting a stream that ended while its container ran (a broken connection, or
  // a server that ends long streams), and between failed attempts.
  std::chrono::milliseconds reconnect_delay{1000};
  // Consecutive failed connections of a container before giving up on it (its error printed);
  // a non-retryable error (a 4xx) gives up at once.
  int max_failures = 3;
  // More containers to follow at once than max_requests: false (`logs -f`, as kubectl) refuses;
  // true (`submit --follow`, whose point is the wait) follows the first ones in the pods' order,
  // says so once, and starts the others on later Updates as streams end.
  bool queue_excess = false;
};

class LogFollower {
 public:
  // Prints whole, prefixed lines; called from the streams' threads (it must be thread-safe).
  using LineSink = std::function<void(const std::string&)>;

  LogFollower(kube::RestClient& client, std::string ns, std::string job, LineSink sink, LogFollowOptions options);
  ~LogFollower();
  LogFollower(const LogFollower&) = delete;
  LogFollower& operator=(const LogFollower&) = delete;

  // The job's pods now (deleting ones included: their streams are not reconnected). Starts the
  // streams of containers that are running or ended and not read to their end yet.
  // kInvalidArgument, naming --max-log-requests, when more containers would be followed at
  // once than `max_requests` (none of the new ones is started), unless `queue_excess`.
  Status Update(const std::vector<PodView>& pods);
  // No stream is open or about to be (re)opened, and none waits for a slot.
  bool Idle() const;
  // Waits (at most `limit`) until no stream is open: the server closes a followed log when its
  // container ends. (Containers waiting for a slot start only on an Update.)
  void WaitIdle(std::chrono::milliseconds limit);
  void StopAll();
  // At the job's end, when containers wait for a slot (queue_excess): the streams of containers
  // still running end (the job is over; their pods are being cleaned up), so that the next
  // Update reads the waiting ones. Those streams are not started again. Nothing when none waits.
  void YieldToWaiting();
  // At the job's end (`submit --follow`), with the pods' final states: the last lines. The
  // waiting containers get the slots (YieldToWaiting) and are read in turn. A stream that has
  // sent its lines and then stays silent for `silence` is closed as read: a kubelet ends a
  // followed log when its container ends, but a server that does not (KWOK's, a proxy) would
  // hold the slot of a waiting container forever, and the job is over. Waits for as long as the
  // streams make progress (a stream started or closed, a line printed): at most `quiet` without
  // any, `limit` in all (a busy machine can take seconds per connection). Then every stream is
  // stopped (at once when `stop` is requested: Ctrl-C). Returns the ended containers whose logs
  // were not read to their end ("pod", or "pod/container" for a sidecar), for the caller to say
  // so: none is dropped silently.
  struct DrainLimits {
    std::chrono::milliseconds silence{2000};
    std::chrono::milliseconds quiet{10000};
    std::chrono::milliseconds limit{60000};
  };
  std::vector<std::string> Drain(const std::vector<PodView>& pods, const DrainLimits& limits,
                                 std::stop_token stop = {});
  // Containers with state kept (of the last Update's pods, or still draining).
  size_t TrackedContainersForTesting() const;
  // The most log requests that were open at once.
  int PeakOpenStreamsForTesting() const;
  // Containers whose streams Update started so far.
  int StreamsStartedForTesting() const;

 private:
  struct Follow;
  struct Listing;  // the containers of an Update's pods
  struct Plan;     // the streams an Update starts
  // The status of the instance a connection reads.
  struct Instance {
    int restarts = 0;
    bool terminated = false;
  };
  // What a stream's thread does after a connection ended.
  enum class After { kReconnect, kStop, kGiveUp };

  // Update's steps.
  void ReapEnded();
  static Listing ListContainers(const std::vector<PodView>& pods);
  void ForgetGone(const Listing& listing) TFJOB_REQUIRES(mu_);
  Plan PlanStarts(const Listing& listing) const TFJOB_REQUIRES(mu_);
  Status FitSlots(Plan& plan) const;
  void SetPending(const Plan& plan) TFJOB_REQUIRES(mu_);
  void RefreshStatus(const Listing& listing) TFJOB_REQUIRES(mu_);
  void Start(const std::string& key, const Listing& listing) TFJOB_REQUIRES(mu_);
  // Stops every stream's thread and joins it (the state is kept).
  void StopThreads();
  // Drain's step: closes, as read, the streams silent for `silence` after some bytes.
  void CloseSilent(std::chrono::milliseconds silence);
  std::vector<std::string> Unread(const Listing& listing) const;

  // A stream's thread and its steps.
  void Run(Follow& f, std::stop_token stop);
  std::optional<Instance> TakeSlot(Follow& f, std::stop_token stop);
  Status Connect(Follow& f, const LogCursor::Print& print, std::stop_token stop);
  After CloseConnection(Follow& f, const Instance& instance, const Status& s, int& failures, std::stop_token stop);

  kube::RestClient& client_;
  const std::string ns_, job_;
  const LineSink sink_;
  const LogFollowOptions options_;
  mutable Mutex mu_;
  std::condition_variable_any changed_;  // a container's status changed, or a stream closed
  int open_ TFJOB_GUARDED_BY(mu_) = 0;   // log requests open
  int peak_open_ TFJOB_GUARDED_BY(mu_) = 0;
  int pending_ TFJOB_GUARDED_BY(mu_) = 0;  // containers waiting for a slot (queue_excess)
  int started_ TFJOB_GUARDED_BY(mu_) = 0;  // streams started by Update
  // Streams started, connections closed and lines printed: Drain's sign of progress.
  std::atomic<uint64_t> progress_{0};
  // "pod uid/container" -> its state; the map itself is touched only by the caller's thread.
  std::map<std::string, std::unique_ptr<Follow>> follows_;
};

}  // namespace tfjob::cli
