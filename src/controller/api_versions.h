#pragma once
// Which version of an API group to speak, by what the API server serves (docs/semantics.md D34).
// Every versioned API the operator calls beyond the core ones has a `VersionedApi`: its group,
// the versions this program can speak (preferred first) and what it is for. The choice is pure
// (`ChooseVersion` over the served versions, read from the group's discovery document or from its
// CRD); an `ApiVersionTracker` holds the version in use and discovers again when a call of it
// answers 404 or 406 (the API turned off, a CRD deleted, a cluster upgraded under a running
// process), at most once per kMinInterval. Informers follow it through `TrackedListWatch`; writes
// ask `Resource` for each call and report failures to `CallFailed`.
// client-go's discovery client with a RESTMapper reset on a NoKindMatch, cut down to one group:
// no cache on disk, no aggregated discovery, no kinds (the caller names its resources).

#include <chrono>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/thread_annotations.h"
#include "controller/reflector.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"

namespace tfjob::controller {

// One version this program can speak, and what a cluster must do to serve it (for the error;
// may be empty).
struct SpokenVersion {
  std::string version;
  std::string how_to_serve;
};

struct VersionedApi {
  std::string group;
  std::vector<SpokenVersion> versions;  // preferred first; not empty
  std::string purpose;                  // what needs it, as a subject: "gang scheduling by volcano"
};

// Pure. The versions an APIGroup document (GET /apis/<group>) lists (`versions[].version`), in
// its order; none for anything else (a 404's empty object).
std::vector<std::string> ServedVersions(const nlohmann::json& api_group);
// Pure. The versions a CustomResourceDefinition serves (`spec.versions[]` with `served: true`).
std::vector<std::string> ServedVersionsOfCrd(const nlohmann::json& crd);
// Pure. The first of api.versions that `served` lists. kNotFound otherwise, with one message
// naming the purpose, the group, each version spoken (and how to serve it) and the versions
// served: "<purpose> needs <group>/<v> (<how>) or ...; the API server serves only a, b" (or
// "serves neither" / "serves no version of <group>").
StatusOr<std::string> ChooseVersion(const VersionedApi& api, const std::vector<std::string>& served);
// Whether a failed call says its version is not (or no longer) served: 404 or 406.
bool VersionNotServed(const Status& status);

// The throttle of discoveries prompted by failed calls: at most one per kMinInterval (a failing
// reflector retries every 0.8-5 s, and every job's write may fail at once). Not thread-safe: its
// owner guards it with its own lock.
class RediscoveryThrottle {
 public:
  static constexpr std::chrono::seconds kMinInterval{1};

  // Whether a failed call at `now` may prompt a discovery: none was let through within
  // kMinInterval before. If so, `now` is the last one let through.
  bool Allow(Clock::SteadyTime now) {
    if (last_ && now - *last_ < kMinInterval) return false;
    last_ = now;
    return true;
  }

 private:
  std::optional<Clock::SteadyTime> last_;
};

// The version of one API in use, shared by its informers, the reconcile and the writes.
// Thread-safe. Discover and CallFailed call the API server on the caller's thread, never under
// the lock.
class ApiVersionTracker {
 public:
  // Discoveries prompted by failed calls are at least this far apart (RediscoveryThrottle).
  static constexpr std::chrono::seconds kMinInterval = RediscoveryThrottle::kMinInterval;

  // REQUIRES: `initial` is one of api.versions. `client` must outlive the tracker.
  ApiVersionTracker(kube::RestClient& client, VersionedApi api, std::string initial, Logger log);

  // Called after each successful Discover, on the discovering thread and without the lock, with
  // the group's APIGroup document and the version chosen: for what a caller learns beside the
  // version (whether another resource of the group is served). Set before the tracker is shared.
  using Discovered = std::function<void(const nlohmann::json& api_group, const std::string& version)>;
  void set_on_discovered(Discovered on_discovered) { on_discovered_ = std::move(on_discovered); }

  const VersionedApi& api() const { return api_; }
  std::string current() const TFJOB_EXCLUDES(mu_);
  // `resource` of the group, in the version in use.
  kube::GroupVersionResource Resource(const std::string& resource) const TFJOB_EXCLUDES(mu_);
  // GET /apis/<group> and ChooseVersion; on success that version is used from now on (a change
  // is logged). A 404 of the group counts as serving nothing (kNotFound from ChooseVersion).
  // Other errors are the request's. On failure the version in use stays, and the error is kept
  // (last_error).
  StatusOr<std::string> Discover() TFJOB_EXCLUDES(mu_);
  // A call of `gvr` failed with `status`: when that says the version is not served and `gvr` is
  // of the version in use, discovers again (at most once per kMinInterval). Otherwise nothing.
  void CallFailed(const kube::GroupVersionResource& gvr, const Status& status) TFJOB_EXCLUDES(mu_);
  // The error of the last discovery when it found no version to speak (for the events of the
  // jobs that need the API); nullopt after a successful one.
  std::optional<Status> last_error() const TFJOB_EXCLUDES(mu_);
  // Discoveries made (for tests and logs).
  int discoveries() const TFJOB_EXCLUDES(mu_);

 private:
  kube::RestClient& client_;
  const VersionedApi api_;
  Logger log_;
  Discovered on_discovered_;
  mutable Mutex mu_;  // guards the members below
  std::string current_ TFJOB_GUARDED_BY(mu_);
  std::optional<Status> last_error_ TFJOB_GUARDED_BY(mu_);
  RediscoveryThrottle prompts_ TFJOB_GUARDED_BY(mu_);
  int discoveries_ TFJOB_GUARDED_BY(mu_) = 0;
};

// A ListWatchSpec of `resource` that follows the tracker: it lists and watches the version in use
// (ListWatchSpec::gvr_source) and reports its failures to CallFailed. The tracker must outlive
// the informer.
ListWatchSpec TrackedListWatch(ApiVersionTracker& tracker, const std::string& resource, const std::string& ns);

}  // namespace tfjob::controller
