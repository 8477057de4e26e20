#pragma once
// KubeLeaseLock: LeaseLock on a coordination.k8s.io/v1 Lease through the REST client.

#include <chrono>
#include <string>

#include "api/object_key.h"
#include "controller/lease_lock.h"
#include "kube/rest_client.h"

namespace tfjob::controller {

class KubeLeaseLock final : public LeaseLock {
 public:
  // Options for the REST client of the lease: no retries of its own (the elector tries again
  // every retry period) and a time-out of a quarter of the renew deadline per request, so one
  // attempt (a read and a write) takes at most half of it, and a release at shutdown is short
  // (docs/operator.md, section 2). `abort` is cleared: the release must still run at shutdown.
  static kube::RestClientOptions ClientOptions(std::chrono::seconds renew_deadline, kube::RestClientOptions base);

  KubeLeaseLock(kube::RestClient& client, std::string ns, std::string name);

  // LeaseLock:
  StatusOr<LeaderRecord> Get() override;
  Status Create(const LeaderRecord& record) override;
  Status Update(const LeaderRecord& record) override;
  std::string Describe() const override { return api::ObjectKey{ns_, name_}.String(); }

 private:
  nlohmann::json ToLease(const LeaderRecord& record) const;

  kube::RestClient& client_;
  const std::string ns_;
  const std::string name_;
};

}  // namespace tfjob::controller
