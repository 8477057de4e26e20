#pragma once
// Runnable: one long-running part of a process, as a Manager starts and stops it
// (controller-runtime's Runnable with LeaderElectionRunnable). A part says whether it needs the
// leader: a controller's workers run only on the replica that holds the lease; servers and
// caches run on every replica. operator/manager.h documents the order in which the operator's
// Manager starts and stops them.

#include <functional>
#include <string>

#include "common/status.h"

namespace tfjob::controller {

struct Runnable {
  std::string name;  // for logs and errors ("metrics-server", "cache", "tfjob-controller")
  // Started only once this process leads (or at once without leader election), after every
  // runnable that does not need it.
  bool needs_leader = false;
  // Starts the part and returns (its threads run until `stop`). An error ends the start-up: the
  // runnables started so far are stopped and the process exits 2. Runs on the main thread, or
  // for a leader's runnable on the elector's thread.
  std::function<Status()> start;
  // Optional: whether the part is ready for the next one to start (a cache: synced). Polled
  // after `start` until true or the stop.
  std::function<bool()> ready;
  // Stops the part and joins its threads. Called once, only after a successful start.
  std::function<void()> stop;
  // Optional health checks, named `check` (default: `name`): /readyz's from the start, /healthz's
  // once every runnable that does not need the leader is ready (docs/operator.md, "Endpoints").
  std::string check;
  std::function<Status()> readiness;
  std::function<Status()> liveness;
};

}  // namespace tfjob::controller
