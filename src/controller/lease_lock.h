#pragma once
// LeaseLock: the record behind leader election and where it is kept. LeaseLock is the seam
// (a coordination.k8s.io/v1 Lease in production, an in-memory fake in tests).

#include <chrono>
#include <optional>
#include <string>

#include "common/status.h"

namespace tfjob::controller {

struct LeaderRecord {
  std::string holder_identity;
  int lease_duration_seconds = 0;
  std::chrono::system_clock::time_point acquire_time;
  std::chrono::system_clock::time_point renew_time;
  int leader_transitions = 0;
  std::string resource_version;  // of the object it was read from
  friend bool operator==(const LeaderRecord&, const LeaderRecord&) = default;
};

class LeaseLock {
 public:
  virtual ~LeaseLock() = default;
  // kNotFound when no lease exists yet.
  virtual StatusOr<LeaderRecord> Get() = 0;
  // kAlreadyExists when someone created it first.
  virtual Status Create(const LeaderRecord& record) = 0;
  // Optimistic: kConflict when record.resource_version is stale.
  virtual Status Update(const LeaderRecord& record) = 0;
  virtual std::string Describe() const = 0;
};

}  // namespace tfjob::controller
