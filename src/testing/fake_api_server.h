#pragma once
// FakeApiServer: an in-process kube-apiserver for unit tests. It implements kube::HttpTransport,
// so the real kube::RestClient (and every informer, reflector and writer above it) talks to it
// unchanged, without a cluster or a socket. Test-only (linked only into tests).
//
// What it serves, with the real server's semantics for what the operator uses:
// - one store per resource (group + plural; the version is not checked), objects as JSON; the
//   custom resources of the operator's world (kubeflow.org, Volcano's and scheduler-plugins'
//   PodGroups, Kueue's kueue.x-k8s.io Workloads) need a resourceVersion on an update;
// - create (POST): 409 AlreadyExists, 422 without a name, generateName; assigns metadata.uid,
//   resourceVersion (one counter for every resource, as etcd's revision) and creationTimestamp
//   (from the injected Clock); a pod starts in phase Pending; a resource with a status
//   subresource ignores the body's status (a pod's is reset to Pending);
// - get; list with labelSelector (equality: `k=v`, `k==v`, `k!=v`; set-based: `k in (a,b)`,
//   `k notin (a,b)`, `k`, `!k`), fieldSelector metadata.name / metadata.namespace, limit and
//   continue, and metadata.resourceVersion of the list = the counter;
// - delete with preconditions.uid / resourceVersion (409 Conflict with the storage error's
//   message on a mismatch, 404 NotFound); an object with finalizers gets a deletionTimestamp
//   instead and goes when its last finalizer is removed;
// - merge patch (RFC 7386) and JSON patch (RFC 6902), update (PUT, 409 Conflict on a stale
//   metadata.resourceVersion), on the object or on `/status`: the main resource keeps the old
//   status and `/status` keeps everything but the status (the strategies of pods and custom
//   resources); metadata.generation counts spec changes;
// - watch (`?watch=true&resourceVersion=N`): ADDED/MODIFIED/DELETED as newline-delimited JSON,
//   from N on (N = "" or "0": the current objects as ADDED first); a label-filtered watch sees an
//   object that stops matching as DELETED and one that starts matching as ADDED. The history is
//   bounded (set_history_limit): an N older than what it holds gets an ERROR event (Status
//   reason Expired, code 410) as the watch cache sends. A watch ends on the client's stop or
//   abort, on CloseWatches(), never on timeoutSeconds (time is the test's); PauseWatches holds
//   the events back (a lagging watch), set_watch_event_drop loses some (a gap);
// - errors as metav1.Status bodies (kind Status, status Failure, reason, code, message,
//   details), so kube::StatusFromHttp classifies them as the real server's.
// - discovery of the groups given to ServeVersions: GET /apis/<group> answers the APIGroup
//   document of those versions (404 when none), and a request of any other version of that group
//   answers 404 NotFound, as a server that does not serve it (calling it again with other versions
//   is an upgrade under a running client: the objects stay, stored per group and resource).
//   Other groups: any version is served, and their discovery is 404. GET /apis/<group>/<version>
//   of a served version answers the APIResourceList given to ServeResources;
// Not modelled: admission, validation beyond names, namespaces' existence, garbage collection
// of owned objects, graceful pod deletion (a pod without finalizers goes at once, as one that
// was never bound to a node), strategic merge patch (415), server-side apply.
//
// Hooks: injected faults per verb/resource (the next N requests, or those a predicate picks,
// answer with a given code, optionally after the write was done: a lost response), a latency
// hook called on the caller's thread before each request is served (sleep, block, count
// concurrency), and a log of every request with its answer. Thread-safe.

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "common/clock.h"
#include "common/thread_annotations.h"
#include "kube/http_transport.h"
#include "kube/resource_path.h"
#include "kube/rest_client.h"

namespace tfjob::testing {

// One request as the server understood it.
struct FakeRequest {
  std::string method;       // GET, POST, PUT, PATCH, DELETE
  std::string verb;         // create, get, list, watch, update, patch, delete
  std::string group;        // "" for the core group
  std::string version;      // "" for a group's discovery document (GET /apis/<group>)
  std::string resource;     // plural
  std::string ns;           // "" for cluster scope or all namespaces
  std::string name;         // "" for a collection
  std::string subresource;  // "status" or ""
  std::map<std::string, std::string> query;
  std::string body;
  std::string content_type;
  long code = 0;  // the answer's HTTP status (0 while being served)
};

// An injected failure: requests matching verb/resource/subresource (empty = any) and the
// predicate (if any) answer `code` with a Status body. `times` < 0: every match.
struct Fault {
  std::string verb;
  std::string resource;
  std::optional<std::string> subresource;  // nullopt = any
  std::function<bool(const FakeRequest&)> when;
  long code = 500;
  std::string reason;   // default from the code (InternalError, Invalid, Conflict, ...)
  std::string message;  // default: "injected <code>"
  int times = 1;
  bool after_write = false;  // do the write, then answer the error (a lost response)
  std::optional<int> retry_after;
};

class FakeApiServer final : public kube::HttpTransport {
 public:
  explicit FakeApiServer(Clock& clock);
  ~FakeApiServer() override;

  // --- Hooks -------------------------------------------------------------------------------
  void AddFault(Fault fault) TFJOB_EXCLUDES(mu_);
  void ClearFaults() TFJOB_EXCLUDES(mu_);
  // Called on the requesting thread before each Send is served (not for watches), without any
  // lock held: a test sleeps, blocks or counts concurrent requests here.
  void set_latency_hook(std::function<void(const FakeRequest&)> hook) TFJOB_EXCLUDES(mu_);
  // How many watch events are kept for resuming watches (default 10,000).
  void set_history_limit(size_t events) TFJOB_EXCLUDES(mu_);
  // Ends every open watch (the client resumes from its last version, as after a server restart).
  void CloseWatches() TFJOB_EXCLUDES(mu_);
  // Holds every watch's events back until ResumeWatches (a watch that lags: the informers'
  // caches go stale while writes succeed). Events are kept, not lost.
  void PauseWatches() TFJOB_EXCLUDES(mu_);
  void ResumeWatches() TFJOB_EXCLUDES(mu_);
  // Changes for which `drop(type, object)` is true reach no watch, ever: what a watch gap that a
  // relist papered over loses (a pod created and deleted inside it). The store has them; a list
  // shows them. Called with the server's lock held: it must not call the server. nullptr: none.
  void set_watch_event_drop(std::function<bool(const std::string& type, const nlohmann::json& object)> drop)
      TFJOB_EXCLUDES(mu_);

  // The versions of `group` the server serves from now on (see above), preferred first.
  void ServeVersions(const std::string& group, std::vector<std::string> versions) TFJOB_EXCLUDES(mu_);
  // The resources GET /apis/<group>/<version> lists (an APIResourceList, `resources[].name`) for a
  // version ServeVersions serves; none given: an empty list.
  void ServeResources(const std::string& group, const std::string& version, std::vector<std::string> resources)
      TFJOB_EXCLUDES(mu_);

  // --- Assertions --------------------------------------------------------------------------
  std::vector<FakeRequest> requests() const TFJOB_EXCLUDES(mu_);
  // Requests of `verb` on `resource` (empty = any), with `subresource` when given.
  int CountRequests(const std::string& verb, const std::string& resource,
                    std::optional<std::string> subresource = std::nullopt) const TFJOB_EXCLUDES(mu_);
  void ClearRequests() TFJOB_EXCLUDES(mu_);
  // Watches being served right now.
  int open_watches() const TFJOB_EXCLUDES(mu_);
  // The counter (the resourceVersion of the last write).
  uint64_t resource_version() const TFJOB_EXCLUDES(mu_);

  // --- Direct access (no faults, no latency, not logged; watch events as for a request) -----
  std::optional<nlohmann::json> Get(const kube::GroupVersionResource& gvr, const std::string& ns,
                                    const std::string& name) const TFJOB_EXCLUDES(mu_);
  std::vector<nlohmann::json> List(const kube::GroupVersionResource& gvr, const std::string& ns = "") const
      TFJOB_EXCLUDES(mu_);
  // The verbs of the API with its semantics; errors as the REST client would see them.
  StatusOr<nlohmann::json> Create(const kube::GroupVersionResource& gvr, const std::string& ns, nlohmann::json object)
      TFJOB_EXCLUDES(mu_);
  StatusOr<nlohmann::json> MergePatch(const kube::GroupVersionResource& gvr, const std::string& ns,
                                      const std::string& name, const nlohmann::json& patch,
                                      const std::string& subresource = "") TFJOB_EXCLUDES(mu_);
  Status Delete(const kube::GroupVersionResource& gvr, const std::string& ns, const std::string& name)
      TFJOB_EXCLUDES(mu_);

  // kube::HttpTransport:
  StatusOr<kube::HttpResponse> Send(const kube::HttpRequest& request) override TFJOB_EXCLUDES(mu_);
  Status Stream(const kube::HttpRequest& request, const kube::ByteSink& on_bytes, std::stop_token stop) override
      TFJOB_EXCLUDES(mu_);

 private:
  struct Answer {
    long code;
    nlohmann::json body;
  };
  struct Event {
    uint64_t rv;
    std::string resource_key;  // group/resource
    std::string type;          // ADDED, MODIFIED, DELETED
    nlohmann::json object;
    std::optional<nlohmann::json> old_object;  // MODIFIED: before
  };
  using Objects = std::map<std::string, nlohmann::json>;  // "ns/name" -> object

  Answer Serve(const FakeRequest& r, const std::string& body) TFJOB_REQUIRES(mu_);
  // The discovery answer, or a 404 for a version not served; nullopt: serve the request.
  std::optional<Answer> Discovery(const FakeRequest& r) const TFJOB_REQUIRES(mu_);
  Answer DoCreate(const FakeRequest& r, nlohmann::json object) TFJOB_REQUIRES(mu_);
  Answer DoGet(const FakeRequest& r) TFJOB_REQUIRES(mu_);
  Answer DoList(const FakeRequest& r) TFJOB_REQUIRES(mu_);
  Answer DoDelete(const FakeRequest& r, const std::string& body) TFJOB_REQUIRES(mu_);
  Answer DoWrite(const FakeRequest& r, const std::string& body) TFJOB_REQUIRES(mu_);  // PUT, PATCH
  // Stores `object` under `key` (bumping the version) or removes it, and records the event.
  nlohmann::json Commit(const std::string& resource_key, const std::string& key, nlohmann::json object,
                        const std::string& type) TFJOB_REQUIRES(mu_);
  std::optional<Fault> TakeFault(const FakeRequest& r) TFJOB_REQUIRES(mu_);
  // The body of Stream; unlocks mu_ while the client's sink runs.
  Status Watch(FakeRequest& r, const std::stop_token& abort, const kube::ByteSink& on_bytes,
               const std::stop_token& stop) TFJOB_REQUIRES(mu_);
  Status Refuse(FakeRequest& r, long code, const nlohmann::json& body) TFJOB_REQUIRES(mu_);

  Clock& clock_;
  mutable Mutex mu_;
  std::condition_variable_any changed_;                          // a new event, or CloseWatches
  std::map<std::string, Objects> stores_ TFJOB_GUARDED_BY(mu_);  // group/resource -> objects
  uint64_t rv_ TFJOB_GUARDED_BY(mu_) = 0;
  uint64_t uids_ TFJOB_GUARDED_BY(mu_) = 0;
  std::deque<Event> history_ TFJOB_GUARDED_BY(mu_);
  size_t history_limit_ TFJOB_GUARDED_BY(mu_) = 10000;
  uint64_t compacted_rv_ TFJOB_GUARDED_BY(mu_) = 0;  // events up to this one are gone
  uint64_t watch_epoch_ TFJOB_GUARDED_BY(mu_) = 0;   // bumped by CloseWatches
  int open_watches_ TFJOB_GUARDED_BY(mu_) = 0;
  bool watches_paused_ TFJOB_GUARDED_BY(mu_) = false;
  std::function<bool(const std::string&, const nlohmann::json&)> drop_event_ TFJOB_GUARDED_BY(mu_);
  std::vector<Fault> faults_ TFJOB_GUARDED_BY(mu_);
  std::map<std::string, std::vector<std::string>> served_versions_ TFJOB_GUARDED_BY(mu_);   // group -> versions
  std::map<std::string, std::vector<std::string>> served_resources_ TFJOB_GUARDED_BY(mu_);  // "<group>/<version>"
  std::function<void(const FakeRequest&)> latency_hook_ TFJOB_GUARDED_BY(mu_);
  std::vector<FakeRequest> log_ TFJOB_GUARDED_BY(mu_);
};

// A label selector as the API server reads it (labels.Parse): nullopt when malformed.
struct LabelRequirement {
  std::string key;
  enum class Op { kEquals, kNotEquals, kIn, kNotIn, kExists, kDoesNotExist } op;
  std::set<std::string> values;
};
std::optional<std::vector<LabelRequirement>> ParseLabelSelector(const std::string& selector);
bool SelectorMatches(const std::vector<LabelRequirement>& selector, const nlohmann::json& labels);

// Options for a RestClient in front of the fake: no retries (a test sees each injected error
// once) and no client-side rate limit.
kube::RestClientOptions UnthrottledClientOptions();

// Polls `done` (1 ms steps) for at most 10 s: a hang guard for tests that wait on the fake's
// watches and the code under test's threads, not a time assertion.
template <typename F>
bool WaitUntil(F done) {
  for (int i = 0; i < 10000; ++i) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return done();
}

// A TFJob object of `workers` Workers (restartPolicy Never), as a user would create it.
nlohmann::json WorkerJobObject(const std::string& name, int workers);

}  // namespace tfjob::testing
