#pragma once
// KubeLeaseLock: LeaseLock on a coordination.k8s.io/v1 Lease through the REST client.

#include <string>

#include "controller/lease_lock.h"
#include "kube/rest_client.h"

namespace tfjob::controller {

class KubeLeaseLock final : public LeaseLock {
 public:
  KubeLeaseLock(kube::RestClient& client, std::string ns, std::string name);

  // LeaseLock:
  StatusOr<LeaderRecord> Get() override;
  Status Create(const LeaderRecord& record) override;
  Status Update(const LeaderRecord& record) override;
  std::string Describe() const override { return ns_ + "/" + name_; }

 private:
  nlohmann::json ToLease(const LeaderRecord& record) const;

  kube::RestClient& client_;
  const std::string ns_;
  const std::string name_;
};

}  // namespace tfjob::controller
