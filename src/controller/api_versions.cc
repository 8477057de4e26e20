#include "controller/api_versions.h"

#include <algorithm>
#include <set>

#include "api/json_fields.h"

namespace tfjob::controller {

using nlohmann::json;

std::vector<std::string> ServedVersions(const json& api_group) {
  std::vector<std::string> out;
  if (!api_group.is_object()) return out;
  auto versions = api_group.find("versions");
  if (versions == api_group.end() || !versions->is_array()) return out;
  for (const json& v : *versions)
    if (v.is_object())
      if (std::string name = api::StringField(v, "version"); !name.empty()) out.push_back(std::move(name));
  return out;
}

std::vector<std::string> ServedVersionsOfCrd(const json& crd) {
  std::vector<std::string> out;
  if (!crd.is_object()) return out;
  auto spec = crd.find("spec");
  if (spec == crd.end() || !spec->is_object()) return out;
  auto versions = spec->find("versions");
  if (versions == spec->end() || !versions->is_array()) return out;
  for (const json& v : *versions) {
    if (!v.is_object()) continue;
    auto served = v.find("served");
    if (served != v.end() && served->is_boolean() && served->get<bool>())
      if (std::string name = api::StringField(v, "name"); !name.empty()) out.push_back(std::move(name));
  }
  return out;
}

StatusOr<std::string> ChooseVersion(const VersionedApi& api, const std::vector<std::string>& served) {
  for (const SpokenVersion& v : api.versions)
    if (std::find(served.begin(), served.end(), v.version) != served.end()) return v.version;
  std::string needs;
  for (const SpokenVersion& v : api.versions) {
    if (!needs.empty()) needs += " or ";
    needs += api.group + "/" + v.version;
    if (!v.how_to_serve.empty()) needs += " (" + v.how_to_serve + ")";
  }
  // Sorted: the message does not depend on the server's order.
  std::string listed;
  for (const std::string& v : std::set<std::string>(served.begin(), served.end()))
    listed += (listed.empty() ? "" : ", ") + v;
  std::string serves = !listed.empty()            ? "only " + listed
                       : api.versions.size() == 2 ? std::string("neither")
                                                  : "no version of " + api.group;
  return NotFoundError(api.purpose + " needs " + needs + "; the API server serves " + serves);
}

bool VersionNotServed(const Status& status) {
  return IsNotFound(status) || IsNotAcceptable(status);
}

ApiVersionTracker::ApiVersionTracker(kube::RestClient& client, VersionedApi api, std::string initial, Logger log)
    : client_(client), api_(std::move(api)), log_(std::move(log)), current_(std::move(initial)) {}

std::string ApiVersionTracker::current() const {
  MutexLock lock(mu_);
  return current_;
}

kube::GroupVersionResource ApiVersionTracker::Resource(const std::string& resource) const {
  return {api_.group, current(), resource};
}

std::optional<Status> ApiVersionTracker::last_error() const {
  MutexLock lock(mu_);
  return last_error_;
}

int ApiVersionTracker::discoveries() const {
  MutexLock lock(mu_);
  return discoveries_;
}

StatusOr<std::string> ApiVersionTracker::Discover() {
  {
    MutexLock lock(mu_);
    ++discoveries_;
  }
  auto group = client_.GetApiGroup(api_.group);
  // A 404 of the group itself is a server that serves no version of it.
  if (!group.ok() && !IsNotFound(group.status())) return group.status();
  StatusOr<std::string> chosen = ChooseVersion(api_, group.ok() ? ServedVersions(*group) : std::vector<std::string>{});
  std::string before;
  {
    MutexLock lock(mu_);
    before = current_;
    if (chosen.ok()) {
      current_ = *chosen;
      last_error_.reset();
    } else {
      last_error_ = chosen.status();
    }
  }
  if (chosen.ok() && on_discovered_) on_discovered_(group.ok() ? *group : json::object(), *chosen);
  if (chosen.ok() && before != *chosen)
    log_.Info("speaking another version of an API",
              {{"api", api_.purpose}, {"from", api_.group + "/" + before}, {"to", api_.group + "/" + *chosen}});
  return chosen;
}

void ApiVersionTracker::CallFailed(const kube::GroupVersionResource& gvr, const Status& status) {
  if (!VersionNotServed(status) || gvr.group != api_.group) return;
  {
    MutexLock lock(mu_);
    if (gvr.version != current_) return;  // another call found the new version already
    if (!prompts_.Allow(client_.clock().SteadyNow())) return;
  }
  log_.Info("an API answered as if its version were not served; discovering again",
            {{"resource", gvr.group + "/" + gvr.version + "/" + gvr.resource}, {"error", status.message()}});
  auto found = Discover();
  if (!found.ok())
    log_.Error("cannot find a served version of an API", {{"api", api_.purpose}, {"error", found.status().message()}});
}

ListWatchSpec TrackedListWatch(ApiVersionTracker& tracker, const std::string& resource, const std::string& ns) {
  ListWatchSpec spec{tracker.Resource(resource), ns};
  spec.gvr_source = [&tracker, resource] { return tracker.Resource(resource); };
  spec.on_failure = [&tracker](const kube::GroupVersionResource& gvr, const Status& s) { tracker.CallFailed(gvr, s); };
  return spec;
}

}  // namespace tfjob::controller
