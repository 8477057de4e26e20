#include "controller/kube_lease_lock.h"

#include "api/json_fields.h"
#include "common/time_format.h"

#include <cstdio>
#include <ctime>

namespace tfjob::controller {
namespace {

using nlohmann::json;

// metav1.MicroTime: RFC 3339 with microseconds.
std::string MicroTime(std::chrono::system_clock::time_point t) {
  return FormatRfc3339(t, 6);
}

std::chrono::system_clock::time_point ParseMicroTime(const std::string& s) {
  std::tm tm{};
  int y, mo, d, h, mi, se;
  long long frac = 0;
  char dot = 0;
  if (std::sscanf(s.c_str(), "%d-%d-%dT%d:%d:%d%c%lld", &y, &mo, &d, &h, &mi, &se, &dot, &frac) < 6) return {};
  tm.tm_year = y - 1900;
  tm.tm_mon = mo - 1;
  tm.tm_mday = d;
  tm.tm_hour = h;
  tm.tm_min = mi;
  tm.tm_sec = se;
  auto t = std::chrono::system_clock::from_time_t(timegm(&tm));
  if (dot == '.') t += std::chrono::microseconds(frac);
  return t;
}

}  // namespace

kube::RestClientOptions KubeLeaseLock::ClientOptions(std::chrono::seconds renew_deadline,
                                                     kube::RestClientOptions base) {
  base.max_retries = 0;
  base.request_timeout = std::chrono::duration_cast<std::chrono::milliseconds>(renew_deadline) / 4;
  base.abort = {};
  return base;
}

KubeLeaseLock::KubeLeaseLock(kube::RestClient& client, std::string ns, std::string name)
    : client_(client), ns_(std::move(ns)), name_(std::move(name)) {}

json KubeLeaseLock::ToLease(const LeaderRecord& r) const {
  json meta = {{"name", name_}, {"namespace", ns_}};
  if (!r.resource_version.empty()) meta["resourceVersion"] = r.resource_version;
  return json{{"apiVersion", "coordination.k8s.io/v1"},
              {"kind", "Lease"},
              {"metadata", meta},
              {"spec",
               {{"holderIdentity", r.holder_identity},
                {"leaseDurationSeconds", r.lease_duration_seconds},
                {"acquireTime", MicroTime(r.acquire_time)},
                {"renewTime", MicroTime(r.renew_time)},
                {"leaseTransitions", r.leader_transitions}}}};
}

StatusOr<LeaderRecord> KubeLeaseLock::Get() {
  TFJOB_ASSIGN_OR_RETURN(json lease, client_.Get(kube::kLeases, ns_, name_));
  const json& spec = api::ObjectField(lease, "spec");
  LeaderRecord r;
  r.holder_identity = api::StringField(spec, "holderIdentity");
  r.lease_duration_seconds = static_cast<int>(api::IntField(spec, "leaseDurationSeconds"));
  r.acquire_time = ParseMicroTime(api::StringField(spec, "acquireTime"));
  r.renew_time = ParseMicroTime(api::StringField(spec, "renewTime"));
  r.leader_transitions = static_cast<int>(api::IntField(spec, "leaseTransitions"));
  r.resource_version = api::StringField(api::ObjectField(lease, "metadata"), "resourceVersion");
  return r;
}

Status KubeLeaseLock::Create(const LeaderRecord& record) {
  return client_.Create(kube::kLeases, ns_, ToLease(record)).status();
}

Status KubeLeaseLock::Update(const LeaderRecord& record) {
  return client_.Update(kube::kLeases, ns_, name_, ToLease(record)).status();
}

}  // namespace tfjob::controller
